package cmd

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
	"github.com/gtrace/gtrace/pkg/record"
)

// execRecord runs gtrace record with args and d, as the root command
// would, and returns its error.
func execRecord(d *Deps, args ...string) error {
	root := newRootCmd(d)
	root.SetArgs(append([]string{"record"}, args...))
	root.SetOut(d.Out)
	root.SetErr(d.Err)
	return root.ExecuteContext(context.Background())
}

// TestRecordCmdFilterOrder checks that each -f goes with the -e before it
// and with no other.
func TestRecordCmdFilterOrder(t *testing.T) {
	cases := []struct {
		args []string
		want []record.EventSpec
	}{
		{[]string{"-e", "a:b"}, []record.EventSpec{{Pattern: "a:b"}}},
		{[]string{"-e", "a:b", "-f", "x == 1", "-e", "c:*"}, []record.EventSpec{{Pattern: "a:b", Filter: "x == 1"}, {Pattern: "c:*"}}},
		{[]string{"-e", "a:b", "-e", "c:*", "-f", "y > 2"}, []record.EventSpec{{Pattern: "a:b"}, {Pattern: "c:*", Filter: "y > 2"}}},
		{[]string{"--event=a:b", "--filter", "x == 1", "-e", "c:d", "--filter=z != 0", "-e", "*:*"},
			[]record.EventSpec{{Pattern: "a:b", Filter: "x == 1"}, {Pattern: "c:d", Filter: "z != 0"}, {Pattern: "*:*"}}},
	}
	for _, tc := range cases {
		var got *recordOptions
		c := newRecordCmd(&Deps{}, func(o *recordOptions) error { got = o; return nil })
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil {
			t.Fatalf("Execute(%q) = %v", tc.args, err)
		}
		if !reflect.DeepEqual(got.Events, tc.want) {
			t.Errorf("record %q: events %+v, want %+v", tc.args, got.Events, tc.want)
		}
	}
}

func TestRecordCmdFlags(t *testing.T) {
	var got *recordOptions
	c := newRecordCmd(&Deps{}, func(o *recordOptions) error { got = o; return nil })
	c.SetArgs([]string{"-e", "sched", "-o", "x.dat", "-b", "1024", "-P", "1,2", "--follow", "-C", "boot", "--duration", "2s",
		"--compression", "zstd", "--file-version", "7", "--dry-run", "--", "sleep", "1"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	want := &recordOptions{
		Events: []record.EventSpec{{Pattern: "sched"}}, Output: "x.dat", BufferKB: 1024, PIDs: []int{1, 2}, Follow: true, Clock: "boot",
		Duration: 2 * time.Second, Compression: "zstd", FileVersion: 7, DryRun: true, Command: []string{"sleep", "1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("options %+v, want %+v", got, want)
	}
	c = newRecordCmd(&Deps{}, func(o *recordOptions) error { got = o; return nil })
	c.SetArgs([]string{"-e", "sched"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Output != "trace.dat" || got.BufferKB != record.DefaultBufferKB || got.Clock != "mono" || got.FileVersion != 7 || got.Compression != "none" {
		t.Errorf("defaults %+v", got)
	}
}

func TestRecordCmdUsage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "record needs an event"},
		{[]string{"-f", "x == 1", "-e", "a:b"}, "a filter must follow the -e EVENT it filters"},
		{[]string{"-e", "a:b", "-f", "x == 1", "-f", "y == 2"}, "-e a:b already has a filter: join the two with && in one -f"},
		{[]string{"-e", "a:b", "stray"}, `record takes no arguments, got "stray"`},
		{[]string{"-e", "a:b", "--compression", "gzip"}, `--compression:1:1: invalid compression "gzip"`},
		{[]string{"-e", "a:b", "--file-version", "5"}, "--file-version:1:1: file version 5 out of range"},
		{[]string{"-e", "a:b", "--file-version", "6", "--compression", "zstd"}, "--compression zstd needs --file-version 7"},
		{[]string{"-e", "a:b", "-b", "0"}, "-b:1:1: buffer size 0 out of range"},
		{[]string{"-e", "a:b", "-C", "local"}, `-C:1:1: invalid clock "local"`},
		{[]string{"-e", "a:b", "-o", ""}, "-o needs a file name"},
	}
	for _, tc := range cases {
		d, _, _ := fakeDeps(t)
		err := execRecord(d, tc.args...)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || (!errors.As(err, &ue) && !isCobraUsage(err)) {
			t.Errorf("record %q = %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestRecordCmdDryRun plans against the format fixtures and prints the
// programs without loading anything.
func TestRecordCmdDryRun(t *testing.T) {
	d, out, _ := fakeDeps(t)
	if err := execRecord(d, "-e", "sched:sched_switch", "-f", "prev_pid == 1", "-e", "raw_syscalls:sys_enter", "--dry-run"); err != nil {
		t.Fatal(err)
	}
	// Where the kernel has BTF, sys_enter's records are built on its raw
	// tracepoint (pkg/bpfgen/direct.go); without, the plan says why not.
	enter := "# gtrace_rec1: raw_syscalls:sys_enter (ID 443), 64-byte records\n"
	switch {
	case runtime.GOARCH != "amd64":
	case probe.HaveKernelBTF():
		enter = "# gtrace_rec1: raw_syscalls:sys_enter (ID 443), 64-byte records, built on raw tracepoint sys_enter\n"
	default:
		enter = "# on classic tracepoints: no kernel BTF (/sys/kernel/btf/vmlinux) for raw tracepoints\n"
	}
	for _, want := range []string{
		"# gtrace_rec0: sched:sched_switch (ID ",
		", filter prev_pid == 1\n",
		enter,
		"Call FnRingbufOutput",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	d, _, _ = fakeDeps(t)
	err := execRecord(d, "-e", "sched:sched_switch", "-f", "prev_pdi == 1", "--dry-run")
	var pe *parse.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Caret(), `-f:1:1: Field not found: "prev_pdi"`) || !strings.Contains(pe.Caret(), "^~~") {
		t.Errorf("unknown field: %v, want a -f error with a caret", err)
	}
}
