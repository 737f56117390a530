package vm

import (
	"encoding/base64"
	"strings"
	"testing"
)

const kernelHist = `# event histogram
#
# trigger info: hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=2048 if common_pid == 5000 [active]
#

{ common_pid: vmload          [      5000], id: sys_geteuid                   [107] } hitcount:          3
{ common_pid: vmload          [      5000], id: sys_getuid                    [102] } hitcount:          7
{ common_pid: vmload          [      5000], id: sys_getgid                    [104] } hitcount:          7
{ common_pid: vmload          [      5000], id: sys_getppid                   [110] } hitcount:        100

Totals:
    Hits: 117
    Entries: 4
    Dropped: 0
`

func TestCompareHist(t *testing.T) {
	swap := func(s, a, b string) string {
		s = strings.Replace(s, a, "\x00", 1)
		s = strings.Replace(s, b, a, 1)
		return strings.Replace(s, "\x00", b, 1)
	}
	getuid := "{ common_pid: vmload          [      5000], id: sys_getuid                    [102] } hitcount:          7"
	getgid := "{ common_pid: vmload          [      5000], id: sys_getgid                    [104] } hitcount:          7"
	geteuid := "{ common_pid: vmload          [      5000], id: sys_geteuid                   [107] } hitcount:          3"
	for _, tc := range []struct {
		name, gtrace string
		ok           bool
	}{
		{"equal", kernelHist, true},
		{"ties in another order", swap(kernelHist, getuid, getgid), true},
		{"sorted wrong", swap(kernelHist, getuid, geteuid), false},
		{"one more space", strings.Replace(kernelHist, "hitcount:          3", "hitcount:           3", 1), false},
		{"another count", strings.Replace(kernelHist, "Hits: 117", "Hits: 118", 1), false},
		{"a line less", strings.Replace(kernelHist, getuid+"\n", "", 1), false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CompareHist(kernelHist, tc.gtrace)
			if (err == nil) != tc.ok {
				t.Errorf("CompareHist() = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestSortFields(t *testing.T) {
	h := "# trigger info: hist:keys=count.log2:vals=hitcount,count:sort=count.descending,hitcount:size=2048 [active]\n"
	if got := strings.Join(sortFields(h), ","); got != "count,hitcount" {
		t.Errorf("sortFields(%q) = %s, want count,hitcount", h, got)
	}
	e := "{ count: ~ 2^7       } hitcount:          3  count:        300"
	if got := signature(e, []string{"count", "hitcount"}); got != "count=300 hitcount=3" {
		t.Errorf("signature(%q) = %q, want %q", e, got, "count=300 hitcount=3")
	}
}

func TestParseConsole(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	log := strings.Join([]string{
		"[    0.000000] Linux version 6.1.0",
		"=== BOOT uptime=6.02 kernel=6.1.0-56-amd64",
		"=== CASE headline uptime=6.10 kind=hist",
		"=== KERNEL-TIME uptime=6.90",
		"=== KERNEL rc=0",
		b64(kernelHist)[:40],
		b64(kernelHist)[40:],
		"=== .",
		"=== KERNEL-STDERR rc=0",
		"=== .",
		"=== GTRACE-TIME uptime=9.20",
		"=== GTRACE rc=3",
		b64("out"),
		"=== .",
		"=== GTRACE-STDERR rc=0",
		b64("err"),
		"=== .",
		"=== END headline uptime=9.30",
		"=== SKIP comm needs kernel 6.12",
		"=== CASE nobtf-plan-hist uptime=9.31 kind=plan",
		"=== PLAN rc=0",
		b64(noBTFHist),
		"=== .",
		"=== PLAN-STDERR rc=0",
		"=== .",
		"=== END nobtf-plan-hist uptime=9.35",
		"=== CASE cut uptime=9.40",
		"=== DONE uptime=12.00",
		"[   12.1] reboot: Power down",
	}, "\r\n")
	con, err := ParseConsole(strings.NewReader(log))
	if err != nil {
		t.Fatalf("ParseConsole: %v", err)
	}
	if con.Release != "6.1.0-56-amd64" || con.Boot != 6.02 || !con.Done || con.Finish != 12 || len(con.Cases) != 4 {
		t.Fatalf("ParseConsole() = %+v", con)
	}
	c := con.Cases[0]
	if c.Name != "headline" || c.Kind != "hist" || c.Partial || c.Start != 6.1 || c.Mid != 6.9 || c.End != 9.3 ||
		c.Kernel.Stdout != kernelHist || c.Gtrace != (Output{RC: 3, Stdout: "out", Stderr: "err"}) {
		t.Errorf("case 0 = %+v", c)
	}
	if c := con.Cases[1]; c.Name != "comm" || c.Skip != "needs kernel 6.12" {
		t.Errorf("case 1 = %+v, want skipped", c)
	}
	if c := con.Cases[2]; c.Name != "nobtf-plan-hist" || c.Kind != "plan" || c.Plan != (Output{Stdout: noBTFHist}) {
		t.Errorf("case 2 = %+v", c)
	}
	if !con.Cases[3].Partial {
		t.Errorf("case 3 = %+v, want Partial", con.Cases[3])
	}
}

// Plans as the guest prints them (plan in init.sh).
const (
	btfHist = `# trigger info: hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=2048 [active]
# on raw tracepoint sys_enter: the record is built from its arguments
gtrace_hist (Tracing, 87 instructions):
`
	noBTFHist = `# trigger info: hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=2048 [active]
# on classic tracepoint raw_syscalls:sys_enter: no kernel BTF (/sys/kernel/btf/vmlinux) for raw tracepoint sys_enter
gtrace_hist (TracePoint, 44 instructions):
`
	btfRecord = `# gtrace_rec0: raw_syscalls:sys_enter (ID 443), 64-byte records, built on raw tracepoint sys_enter
# gtrace_sysenter: syscalls:sys_enter_accept (ID 2232), 40-byte records, with the other syscall events on raw tracepoint sys_enter
# (and 700 more events of syscalls)
gtrace_rec0 (Tracing, 150 instructions):
gtrace_sysenter (Tracing, 400 instructions):
`
	noBTFRecord = `# on classic tracepoints: no kernel BTF (/sys/kernel/btf/vmlinux) for raw tracepoints
# gtrace_rec0: raw_syscalls:sys_enter (ID 443), 64-byte records, sharing its program (cookie 443)
# gtrace_rec1: syscalls:sys_enter_accept (ID 2232), 40-byte records, sharing its program (cookie 2232)
# (and 700 more events of syscalls)
gtrace_rec0 (TracePoint, 90 instructions):
`
)

func TestCheckPlan(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		btf, ok    bool
	}{
		{"hist with BTF", btfHist, true, true},
		{"hist without BTF", noBTFHist, false, true},
		{"record with BTF", btfRecord, true, true},
		{"record without BTF", noBTFRecord, false, true},
		{"hist classic where BTF is", noBTFHist, true, false},
		{"record classic where BTF is", noBTFRecord, true, false},
		{"hist raw where BTF is not", btfHist, false, false},
		{"record raw where BTF is not", btfRecord, false, false},
		{"a raw program without BTF", strings.Replace(noBTFRecord, "TracePoint", "Tracing", 1), false, false},
		{"empty", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckPlan(tc.plan, tc.btf); (err == nil) != tc.ok {
				t.Errorf("CheckPlan(btf %v) = %v, want ok %v", tc.btf, err, tc.ok)
			}
		})
	}
}

func TestCompareRecord(t *testing.T) {
	tc := "cpus=1\n" +
		"          vmload-5000  [000]    12.000001: sys_enter_lseek:      fd: 0x00000003, offset: 0x00000000, whence: 0x00000000\n" +
		"          vmload-5000  [000]    12.000002: sys_enter_lseek:      fd: 0x00000003, offset: 0x00000007, whence: 0x00000000\n"
	other := strings.NewReplacer("12.000001", "15.100000", "12.000002", "15.200000").Replace(tc)
	flags := strings.ReplaceAll(tc, "[000]    12", "[000] d..1. 12")
	for _, c := range []struct {
		name, gtrace string
		ok           bool
	}{
		{"equal", tc, true},
		{"other timestamps", other, true},
		{"with latency flags", flags, true},
		{"another offset", strings.Replace(tc, "0x00000007", "0x00000008", 1), false},
		{"an event less", strings.SplitAfterN(tc, "\n", 3)[0] + strings.SplitAfterN(tc, "\n", 3)[1], false},
		{"another cpu", strings.Replace(tc, "[000]", "[001]", 1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := CompareRecord(tc, c.gtrace); (err == nil) != c.ok {
				t.Errorf("CompareRecord() = %v, want ok %v", err, c.ok)
			}
		})
	}
	if err := CompareRecord("cpus=1\n", "cpus=1\n"); err == nil {
		t.Errorf("CompareRecord of no events = nil, want an error")
	}
}
