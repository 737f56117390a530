package attach

import "testing"

func TestPointString(t *testing.T) {
	cases := []struct {
		p    Point
		want string
	}{
		{TracepointAt("sched", "sched_switch"), "tracepoint sched:sched_switch"},
		{Point{Kind: TpBTF, Target: "sys_enter"}, "tp_btf sys_enter"},
		{Point{Kind: Uprobe, Target: "/bin/true", Symbol: "main", Offset: 16}, "uprobe /bin/true:main+0x10"},
		{Point{Kind: Uprobe, Target: "/bin/true", Offset: 0x1234}, "uprobe /bin/true+0x1234"},
		{Point{Kind: Kretprobe, Target: "do_sys_openat2"}, "kretprobe do_sys_openat2"},
		{Point{Kind: Tracepoint, System: "irq", Event: "softirq_entry", Cookie: 7}, "tracepoint irq:softirq_entry (cookie 7)"},
		{Point{Kind: Kind(42)}, "Kind(42) "},
	}
	for _, c := range cases {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.p, got, c.want)
		}
	}
}
