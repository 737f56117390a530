package cmd

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// update is -update: rewrite the golden files under testdata/ instead of
// comparing with them (go test ./cmd -run TestSynthCmd -update).
var update = flag.Bool("update", false, "rewrite the golden files")

func TestSynthCmdFlags(t *testing.T) {
	var got *synthOptions
	c := newSynthCmd(&Deps{}, func(o *synthOptions) error { got = o; return nil })
	c.SetArgs([]string{"a u64 x", "-F", "b int y"})
	if err := c.Execute(); err != nil || got == nil || !reflect.DeepEqual(*got, synthOptions{Defs: []string{"a u64 x", "b int y"}, Format: true}) {
		t.Fatalf("Execute() = %v, opts %+v", err, got)
	}
}

// TestSynthCmd runs gtrace synth and list --synth: the listing, the
// derived format files (testdata/synth.format.golden) and list -F over
// the same definitions, and bad definitions with their carets, exit 2.
func TestSynthCmd(t *testing.T) {
	defs := []string{"wakeup_latency u64 lat; pid_t pid; int prio", "wake_comm char comm[16]; char name[]; unsigned long[] stack"}
	d, out, errb := fakeDeps(t)
	if code := runDeps(d, append([]string{"synth"}, defs...)...); code != 0 {
		t.Fatalf("synth: exit %d: %s", code, errb)
	}
	want := "wakeup_latency\tu64 lat; pid_t pid; int prio\nwake_comm\tchar[16] comm; char[] name; unsigned long[] stack\n"
	if out.String() != want {
		t.Errorf("synth printed\n%q\nwant\n%q", out, want)
	}

	d, out, errb = fakeDeps(t)
	if code := runDeps(d, append([]string{"synth", "-F"}, defs...)...); code != 0 {
		t.Fatalf("synth -F: exit %d: %s", code, errb)
	}
	golden := filepath.Join("testdata", "synth.format.golden")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(b) {
		t.Errorf("synth -F printed\n%s\nwant\n%s", out, b)
	}

	// list -F prints the field lines of the same format files.
	d, list, errb := fakeDeps(t)
	if code := runDeps(d, "list", "--synth", defs[0], "--synth", defs[1], "-F", "synthetic:*", "sched:sched_switch"); code != 0 {
		t.Fatalf("list --synth: exit %d: %s", code, errb)
	}
	var fields []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "\tfield:") {
			fields = append(fields, l)
		}
	}
	gotFields := list.String()
	if !strings.Contains(gotFields, "sched:sched_switch\n") || !strings.Contains(gotFields, "synthetic:wake_comm\n") {
		t.Errorf("list --synth printed\n%s\nwant sched:sched_switch and the synthetic events", gotFields)
	}
	for _, f := range fields {
		if !strings.Contains(gotFields, f+"\n") {
			t.Errorf("list --synth -F lacks %q", f)
		}
	}
}

func TestSynthCmdErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"synth", "ok u64 a", "myevent chr arg"}, "gtrace: synth:1:9: Invalid type\n  myevent chr arg\n          ^~~\n  hint: did you mean \"char\"?\n"},
		{[]string{"synth", "ev u64 a", "ev u32 b"}, "gtrace: synth:1:1: Event already exists\n  ev u32 b\n  ^~\n  hint: synthetic event \"ev\" is defined already: give each definition once, or another name\n"},
		{[]string{"list", "--synth", "mye-vent char str[]"}, "gtrace: --synth:1:1: Illegal name\n  mye-vent char str[]\n  ^~~~~~~~\n  hint: a name is letters, digits and '_', and does not start with a digit\n"},
		{[]string{"list", "--synth", "ev u64 a", "--synth", "ev u64 b", "synthetic:*"}, "gtrace: --synth:1:1: Event already exists\n  ev u64 b\n  ^~\n  hint: synthetic event \"ev\" is defined already: give each definition once, or another name\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			d, out, errb := fakeDeps(t)
			if code := runDeps(d, tt.args...); code != 2 || errb.String() != tt.want || out.Len() != 0 {
				t.Errorf("gtrace %q: exit %d, stderr\n%s\nwant exit 2, stderr\n%s", tt.args, code, errb, tt.want)
			}
		})
	}
}
