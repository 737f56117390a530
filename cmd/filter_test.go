package cmd

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/pkg/record"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

func TestFilterCmdFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want filterOptions
	}{
		{
			[]string{"-e", "syscalls:sys_enter_write", "fd == 1", "-o", "x.dat", "--format", "ndjson", "-P", "1", "--duration", "2s", "-q", "--", "ls", "-l"},
			filterOptions{Events: []record.EventSpec{{Pattern: "syscalls:sys_enter_write", Filter: "fd == 1"}}, Output: "x.dat", Format: "ndjson",
				PIDs: []int{1}, Duration: 2 * time.Second, Quiet: true, Command: []string{"ls", "-l"}},
		},
		{
			[]string{"-e", "sched:*", "-f", "prev_pid == 0", "-e", "raw_syscalls:sys_enter", "--check"},
			filterOptions{Events: []record.EventSpec{{Pattern: "sched:*", Filter: "prev_pid == 0"}, {Pattern: "raw_syscalls:sys_enter"}}, Format: "text", Check: true},
		},
	} {
		var got *filterOptions
		c := newFilterCmd(&Deps{}, func(o *filterOptions) error { got = o; return nil })
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil {
			t.Fatalf("filter %q: %v", tc.args, err)
		}
		// The defaults of flags that the case does not set.
		tc.want.BufferKB, tc.want.Clock, tc.want.Compression, tc.want.FileVersion = record.DefaultBufferKB, "mono", "none", 7
		if tc.want.Format == "" {
			tc.want.Format = "text"
		}
		if !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("filter %q: options = %+v\nwant %+v", tc.args, *got, tc.want)
		}
	}
}

func TestFilterUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"filter", "fd == 1"}, "filter needs an event"},
		{[]string{"filter", "-e", "a:b", "-e", "c:d", "fd == 1"}, "a filter argument needs exactly one -e, and 2 are given: give each -e its own -f"},
		{[]string{"filter", "-e", "a:b", "-f", "fd == 1", "fd == 2"}, "-e a:b has a filter already (-f): join the two with && in one"},
		{[]string{"filter", "-e", "a:b", "fd == 1", "ls"}, `filter takes one filter argument, got 2 (["fd == 1" "ls"])`},
		{[]string{"filter", "-e", "a:b", "--format", "json"}, `invalid format "json"`},
		{[]string{"filter", "-e", "a:b", "--check", "--", "ls"}, "--check only checks the filters"},
		{[]string{"filter", "-e", "a:b", "--compression", "zstd"}, "--compression and --file-version are those of the -o file: give -o FILE"},
		{[]string{"filter", "-e", "a:b", "-o", "x.dat", "--file-version", "6", "--compression", "zstd"}, "--compression zstd needs --file-version 7"},
	} {
		d, _, errb := fakeDeps(t)
		if code := runDeps(d, tc.args...); code != exitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("gtrace %q: exit %d, stderr:\n%s\nwant 2 and %q", tc.args, code, errb, tc.want)
		}
	}
}

// TestFilterCheck checks --check on the formats of a fake tracefs: each
// event with its filter in normal form, and bad filters with the
// message and the caret under the token, exit 2.
func TestFilterCheck(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		out, err   string
		caretLines string // the source and caret lines of the error
	}{
		{
			args: []string{"-e", "syscalls:sys_enter_write", "fd==1&&(count>0x10||comm~'ba*')"},
			out:  "syscalls:sys_enter_write: fd == 1 && (count > 16 || comm ~ \"ba*\")\n",
		},
		{
			args: []string{"-e", "syscalls:sys_enter_openat", "-f", "dfd == 0xffffff9c && filename.ustring ~ \"/etc/*\"", "-e", "raw_syscalls:sys_enter"},
			out:  "syscalls:sys_enter_openat: dfd == -100 && filename.ustring ~ \"/etc/*\"\nraw_syscalls:sys_enter: (no filter)\n",
			err:  "gtrace: warning: -f:1:8: 0xffffff9c reads as -100",
		},
		{
			args: []string{"-e", "sched:*", "-f", "prev_pid == 0 && cpu & CPUS{1,0}"},
			out:  "sched:sched_process_exec: (no filter)\nsched:sched_switch: prev_pid == 0 && cpu & CPUS{1,0}\nsched:sched_waking: (no filter)\n",
			err:  "gtrace: warning: -f:1:1: Field not found: \"prev_pid\" in sched:sched_process_exec (the filter does not fit 2 of the events of \"sched:*\")",
		},
		{
			args: []string{"-e", "syscalls:sys_enter_write", "fd == 1 && cont == 7"},
			code: exitUsage,
			err:  "gtrace: -f:1:12: Field not found: \"cont\" in syscalls:sys_enter_write\n",
			caretLines: "  fd == 1 && cont == 7\n" +
				"             ^~~~\n" +
				"  hint: did you mean \"count\"?\n",
		},
		{
			args:       []string{"-e", "syscalls:sys_enter_write", "comm ~ 'bash"},
			code:       exitUsage,
			err:        "gtrace: -f:1:8: Missing matching quote: this ' is never closed\n",
			caretLines: "  comm ~ 'bash\n         ^~~~~\n",
		},
		{
			args:       []string{"-e", "syscalls:sys_enter_write", "((fd == 1)"},
			code:       exitUsage,
			err:        "gtrace: -f:1:1: Too many '(': this '(' is never closed\n",
			caretLines: "  ((fd == 1)\n  ^\n  hint: add a ')' to close it\n",
		},
		{
			args:       []string{"-e", "syscalls:sys_enter_write", "count ~ \"a*\""},
			code:       exitUsage,
			err:        "gtrace: -f:1:7: Expecting numeric field: \"~\" needs a string field, and field \"count\" (size_t) is numeric\n",
			caretLines: "  count ~ \"a*\"\n        ^\n",
		},
		{
			args:       []string{"-e", "syscalls:sys_enter_write", "fd == 0x1ffffffff"},
			code:       exitUsage,
			err:        "gtrace: -f:1:7: Illegal integer value: 0x1ffffffff out of range for the 4-byte field \"fd\" (unsigned int)\n",
			caretLines: "  fd == 0x1ffffffff\n        ^~~~~~~~~~~\n",
		},
	} {
		d, out, errb := fakeDeps(t)
		code := runDeps(d, append(append([]string{"filter"}, tc.args...), "--check")...)
		if code != tc.code || out.String() != tc.out || !strings.Contains(errb.String(), tc.err) || !strings.Contains(errb.String(), tc.caretLines) {
			t.Errorf("gtrace filter %q --check: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout:\n%s\nstderr with\n%s\n%s",
				tc.args, code, out, errb, tc.code, tc.out, tc.err, tc.caretLines)
		}
	}
}

// TestFilterCheckNoTracefs checks that --check says what it needs when
// tracefs cannot be read.
func TestFilterCheckNoTracefs(t *testing.T) {
	var out, errb bytes.Buffer
	d := &Deps{Out: &out, Err: &errb, TraceFS: func() (*tracefs.FS, error) {
		return nil, errors.New("read tracefs at /sys/kernel/tracing: permission denied: gtrace needs root")
	}}
	code := runDeps(d, "filter", "-e", "sched:sched_switch", "prev_pid == 0", "--check")
	want := "gtrace: --check reads the events' formats from tracefs: read tracefs at /sys/kernel/tracing: permission denied: gtrace needs root\n"
	if code != exitFailure || errb.String() != want || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 and %q", code, out.String(), errb.String(), want)
	}
}
