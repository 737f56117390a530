package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestSQLCmdFlags(t *testing.T) {
	var got *sqlOptions
	c := newSQLCmd(&Deps{}, func(o *sqlOptions) error { got = o; return nil })
	c.SetArgs([]string{"--dry-run", "-n", "lat", "-m", "lat", "-S", "prev_pid,next_comm", "-T", "SELECT", "x FROM e"})
	if err := c.Execute(); err != nil || got == nil || got.SQL != "SELECT x FROM e" ||
		got.Opts.Name != "lat" || got.Opts.OnMax != "lat" || !got.Opts.Trace || strings.Join(got.Opts.Save, ",") != "prev_pid,next_comm" {
		t.Fatalf("Execute() = %v, opts %+v", err, got)
	}
}

// TestSQLCmd runs gtrace sql --dry-run on the wakeup latency example of
// sqlhist's documentation and compares it with pkg/parse's golden of it
// (sqlhist's own output); without --dry-run, and with a bad statement or
// options, it exits 2.
func TestSQLCmd(t *testing.T) {
	d, out, errb := fakeDeps(t)
	stmt := "select start.pid, (end.TIMESTAMP_USECS - start.TIMESTAMP_USECS) as lat from sched_waking as start JOIN sched_switch as end ON start.pid = end.next_pid"
	if code := runDeps(d, "sql", "--dry-run", "-n", "wakeup_lat", stmt); code != 0 {
		t.Fatalf("sql --dry-run: exit %d: %s", code, errb)
	}
	fs, err := d.TraceFS()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out.String(), fs.Root, "/sys/kernel/tracing")
	got = regexp.MustCompile(`_`+strconv.Itoa(os.Getpid())+`_`).ReplaceAllString(got, "_1234_")
	want, err := os.ReadFile(filepath.Join("..", "pkg", "parse", "testdata", "sql", "wakeup.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("sql --dry-run printed\n%s\nwant\n%s", got, want)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"sql", "--dry-run", "--duration", "1s", stmt}, "--dry-run prints the kernel's commands and runs nothing"},
		{[]string{"sql", "--dry-run", "-m", "lat", stmt}, "-m and -c need an action"},
		{[]string{"sql", "--dry-run", "-m", "lat", "-c", "lat", "-s", stmt}, "-m and -c cannot be used together"},
		{[]string{"sql", "--dry-run", strings.Replace(stmt, "end.next_pid", "end.nextpid", 1)}, "Field 'nextpid' not part of event sched_switch"},
	} {
		d, _, errb := fakeDeps(t)
		if code := runDeps(d, tt.args...); code != 2 || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, errb, tt.want)
		}
	}
}
