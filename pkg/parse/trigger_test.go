package parse

import (
	"errors"
	"strings"
	"testing"
)

func TestParseTrigger(t *testing.T) {
	tests := []struct {
		src, want string
		cmd       TriggerCmd
		remove    bool
		count     int64 // -1: unlimited
		target    string
		filter    string
	}{
		{"traceon", "traceon", TrigTraceOn, false, -1, "", ""},
		{"traceoff:3", "traceoff:3", TrigTraceOff, false, 3, "", ""},
		{"  stacktrace:0 \n", "stacktrace:0", TrigStacktrace, false, 0, "", ""},
		{"snapshot:0x10", "snapshot:16", TrigSnapshot, false, 16, "", ""},
		{"snapshot:010", "snapshot:8", TrigSnapshot, false, 8, "", ""},
		{"traceoff if common_pid == 42", "traceoff if common_pid == 42", TrigTraceOff, false, -1, "", "common_pid == 42"},
		{"traceon:3 if pid == 1", "traceon:3 if pid == 1", TrigTraceOn, false, 3, "", "pid == 1"},
		{"traceon:3\tif\tpid==1", "traceon:3 if pid==1", TrigTraceOn, false, 3, "", "pid==1"},
		{"traceon   if  pid==1", "traceon if  pid==1", TrigTraceOn, false, -1, "", " pid==1"},
		{"traceon:", "", 0, false, 0, "", ""}, // error row, see TestParseTriggerErrors
		{"enable_event:kmem:kmalloc", "enable_event:kmem:kmalloc", TrigEnableEvent, false, -1, "kmem:kmalloc", ""},
		{"enable_event:kmem:kmalloc:1 if bytes_req >= 65536", "enable_event:kmem:kmalloc:1 if bytes_req >= 65536",
			TrigEnableEvent, false, 1, "kmem:kmalloc", "bytes_req >= 65536"},
		{"disable_event:sched:sched_switch:5", "disable_event:sched:sched_switch:5", TrigDisableEvent, false, 5, "sched:sched_switch", ""},
		{"enable_hist:kmem:kmalloc", "enable_hist:kmem:kmalloc", TrigEnableHist, false, -1, "kmem:kmalloc", ""},
		{`disable_hist:net:netif_receive_skb if comm=="wget"`, `disable_hist:net:netif_receive_skb if comm=="wget"`,
			TrigDisableHist, false, -1, "net:netif_receive_skb", `comm=="wget"`},
		{"!traceoff", "!traceoff", TrigTraceOff, true, -1, "", ""},
		{" !stacktrace:5 if x > 1", "!stacktrace:5 if x > 1", TrigStacktrace, true, 5, "", "x > 1"},
		{"!enable_event:kmem:kmalloc", "!enable_event:kmem:kmalloc", TrigEnableEvent, true, -1, "kmem:kmalloc", ""},
		{"hist:keys=pid", "hist:keys=pid:vals=hitcount:sort=hitcount:size=2048", TrigHist, false, -1, "", ""},
		{"!hist:keys=pid if pid == 1", "!hist:keys=pid:vals=hitcount:sort=hitcount:size=2048 if pid == 1", TrigHist, true, -1, "", "pid == 1"},
		{"hist keys=call_site.sym:val=bytes_req", "hist:keys=call_site.sym:vals=hitcount,bytes_req:sort=hitcount:size=2048", TrigHist, false, -1, "", ""},
	}
	for _, tt := range tests {
		if tt.want == "" {
			continue
		}
		tr, err := ParseTrigger("-R", tt.src)
		if err != nil {
			t.Errorf("ParseTrigger(%q) = %+v", tt.src, err)
			continue
		}
		if got := tr.String(); got != tt.want {
			t.Errorf("ParseTrigger(%q).String() = %q, want %q", tt.src, got, tt.want)
		}
		count := int64(-1)
		if tr.HasCount {
			count = int64(tr.Count)
		}
		target := ""
		if tr.Cmd.HasTarget() {
			target = tr.Target.System + ":" + tr.Target.Event
			if got := tt.src[tr.Target.Off:tr.Target.End]; got != target {
				t.Errorf("ParseTrigger(%q): target span %q, want %q", tt.src, got, target)
			}
		}
		if tr.Cmd != tt.cmd || tr.Remove != tt.remove || count != tt.count || target != tt.target || tr.FilterText != tt.filter {
			t.Errorf("ParseTrigger(%q) = %v remove %v count %d target %q filter %q, want %v %v %d %q %q",
				tt.src, tr.Cmd, tr.Remove, count, target, tr.FilterText, tt.cmd, tt.remove, tt.count, tt.target, tt.filter)
		}
		if got := tt.src[tr.CmdOff:tr.CmdEnd]; got != tt.cmd.String() {
			t.Errorf("ParseTrigger(%q): command span %q", tt.src, got)
		}
		if tr.Filter != nil {
			if got := tt.src[tr.FilterOff : tr.FilterOff+len(tr.FilterText)]; got != tt.filter {
				t.Errorf("ParseTrigger(%q): filter span %q", tt.src, got)
			}
			if off, end := tr.Filter.Span(); !strings.Contains(tt.filter, tt.src[off:end]) {
				t.Errorf("ParseTrigger(%q): filter node span %q is not in the filter", tt.src, tt.src[off:end])
			}
		}
		if tr.HasCount && !strings.HasPrefix(tt.src[tr.CountOff:], tt.src[tr.CountOff:tr.CountEnd]) {
			t.Errorf("ParseTrigger(%q): count span %d:%d", tt.src, tr.CountOff, tr.CountEnd)
		}
	}
}

// triggerErrorTests are inputs that ParseTrigger rejects.
var triggerErrorTests = []errorTest{
	{"", "empty trigger", 0, 0},
	{"   ", "empty trigger", 3, 3},
	{"!", "missing trigger command after '!'", 1, 1},
	{"! traceon", "missing trigger command after '!'", 1, 1},
	{":5", "missing trigger command", 0, 0},
	{"traceonn", `unknown trigger command "traceonn"`, 0, 8},
	{"  bogus:5", `unknown trigger command "bogus"`, 2, 7},
	{"TRACEON", `unknown trigger command "TRACEON"`, 0, 7},
	{"traceon:", "missing count after ':'", 8, 8},
	{"traceon: 5", "missing count after ':'", 8, 8},
	{"traceon:x", `expected a count after ':', found "x"`, 8, 9},
	{"traceon:if pid == 1", `expected a count after ':', found "if"`, 8, 10},
	{"traceon:-1", `expected a count after ':', found "-1"`, 8, 10},
	{"traceon:5:x", `unexpected ":x" after the count`, 9, 11},
	{"traceon:5x", `invalid count "5x"`, 8, 10},
	{"traceon:09", `invalid count "09"`, 8, 10},
	{"traceon:0x", `invalid count "0x"`, 8, 10},
	{"traceon:99999999999999999999", `invalid count "99999999999999999999" does not fit in 64 bits`, 8, 28},
	{"traceon 5", `expected "if" and a filter, found "5"`, 8, 9},
	{"traceon:5 junk", `expected "if" and a filter, found "junk"`, 10, 14},
	{"traceoff iff pid == 1", `expected "if" and a filter, found "iff"`, 9, 12},
	{"traceoff if", `missing filter after "if"`, 9, 11},
	{"traceoff if   ", `missing filter after "if"`, 9, 11},
	{"traceoff if pid ==", `Invalid value (did you forget quotes)? missing value after "=="`, 16, 18},
	{"stacktrace:2 if pid == 1 &&", `Meaningless filter expression: "&&" at the end of the filter has no operand`, 25, 27},
	{"enable_event", `missing SYSTEM:EVENT after "enable_event"`, 12, 12},
	{"enable_event if pid == 1", `missing SYSTEM:EVENT after "enable_event"`, 12, 12},
	{"enable_event:", `missing SYSTEM:EVENT after "enable_event:"`, 13, 13},
	{"disable_event:kmem", `missing event after system "kmem"`, 14, 18},
	{"enable_hist::kmalloc", "missing system before ':'", 12, 12},
	{"enable_event:kmem:", `missing event after "kmem:"`, 18, 18},
	{"enable_event:kmem::5", `missing event after "kmem:"`, 18, 18},
	{"enable_event:kmem:kmalloc:", "missing count after ':'", 26, 26},
	{"enable_event:kmem:kmalloc:x", `expected a count after ':', found "x"`, 26, 27},
	{"enable_event:kmem:kmalloc:1:2", `unexpected ":2" after the count`, 27, 29},
	{"enable_event:kmem:kmalloc 5", `expected "if" and a filter, found "5"`, 26, 27},
	{"hist:keys=pid:bogus", `unknown attribute "bogus"`, 14, 19},
	{"!hist:keys=pid:bogus", `unknown attribute "bogus"`, 15, 20},
	{"  hist:keys=pid if pid ==", `Invalid value (did you forget quotes)? missing value after "=="`, 23, 25},
	{"hist:", "missing keys", 5, 5},
}

func TestParseTriggerErrors(t *testing.T) {
	checkErrors(t, "-R", ParseTrigger, triggerErrorTests)
}

// TestParseTriggerCaret shows the whole error of a bad trigger: the
// kernel's words, the caret on the token, the hint.
func TestParseTriggerCaret(t *testing.T) {
	_, err := ParseTrigger("-R", "traceoff:5 if comm == ")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("ParseTrigger = %v, want *Error", err)
	}
	want := "-R:1:20: Invalid value (did you forget quotes)? missing value after \"==\"\n" +
		"  traceoff:5 if comm == \n" +
		"                     ^~"
	if got := e.Caret(); !strings.HasPrefix(got, want) {
		t.Errorf("Caret() =\n%s\nwant prefix\n%s", got, want)
	}
	_, err = ParseTrigger("-R", "tracoff:5")
	if !errors.As(err, &e) || e.Caret() != "-R:1:1: unknown trigger command \"tracoff\"\n  tracoff:5\n  ^~~~~~~\n  hint: did you mean traceoff?" {
		t.Errorf("ParseTrigger(tracoff:5) = %+v", err)
	}
}

// applyTriggers applies each line of writes to a new set, stopping at
// the first error.
func applyTriggers(t *testing.T, writes ...string) (*TriggerSet, error) {
	t.Helper()
	var s TriggerSet
	for _, w := range writes {
		tr, err := ParseTrigger("-R", w)
		if err != nil {
			t.Fatalf("ParseTrigger(%q) = %+v", w, err)
		}
		if err := s.Apply(tr); err != nil {
			return &s, err
		}
	}
	return &s, nil
}

// TestTriggerSetListing applies each testdata/trigger/CASE.in (one write
// a line) and compares the trigger file listing with CASE.golden.
// Regenerate with -update.
func TestTriggerSetListing(t *testing.T) {
	goldenFiles(t, "trigger", func(t *testing.T, in string) (string, string) {
		var writes []string
		if text := strings.TrimSuffix(in, "\n"); text != "" {
			writes = strings.Split(text, "\n")
		}
		s, err := applyTriggers(t, writes...)
		if err != nil {
			t.Fatalf("Apply = %+v", err)
		}
		return s.Listing(), "Listing()"
	})
}

// TestTriggerSetKernelListing is grammar §3.5's listing, built from the
// writes that make it, newest first.
func TestTriggerSetKernelListing(t *testing.T) {
	s, err := applyTriggers(t,
		"hist:keys=call_site.sym:vals=bytes_req:sort=bytes_req.descending",
		`disable_hist:net:netif_receive_skb if comm=="wget"`,
		"enable_event:kmem:kmalloc:1 if bytes_req >= 65536",
		"stacktrace",
		"traceon:3 if common_pid == 42",
		"traceoff",
	)
	if err != nil {
		t.Fatalf("Apply = %+v", err)
	}
	want := `traceoff:unlimited
traceon:count=3 if common_pid == 42
stacktrace:unlimited
enable_event:kmem:kmalloc:count=1 if bytes_req >= 65536
disable_hist:net:netif_receive_skb:unlimited if comm=="wget"
hist:keys=call_site.sym:vals=hitcount,bytes_req:sort=bytes_req.descending:size=2048 [active]
`
	if got := s.Listing(); got != want {
		t.Errorf("Listing() =\n%s\nwant\n%s", got, want)
	}
	var empty TriggerSet
	if got := empty.Listing(); got != "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event enable_hist disable_hist hist\n" {
		t.Errorf("empty Listing() = %q", got)
	}
}

// TestTriggerSetKernel618 is what a 6.18 kernel's trigger file of
// sched:sched_process_exec (in a tracefs instance) read after these
// writes, newest first, the filters as typed.
func TestTriggerSetKernel618(t *testing.T) {
	s, err := applyTriggers(t,
		"enable_event:sched:sched_switch:1 if common_pid < 0",
		"stacktrace:2 if common_pid < 0",
		"traceon:3 if common_pid < 0",
		"disable_event:sched:sched_waking if common_pid < 0",
	)
	if err != nil {
		t.Fatalf("Apply = %+v", err)
	}
	want := `disable_event:sched:sched_waking:unlimited if common_pid < 0
traceon:count=3 if common_pid < 0
stacktrace:count=2 if common_pid < 0
enable_event:sched:sched_switch:count=1 if common_pid < 0
`
	if got := s.Listing(); got != want {
		t.Errorf("Listing() =\n%s\nwant\n%s", got, want)
	}
	// The same kernel read "traceon:0x10" as traceon:count=16.
	s, err = applyTriggers(t, "traceon:0x10")
	if err != nil || s.Listing() != "traceon:count=16\n" {
		t.Errorf("traceon:0x10: Listing() = %q, %v", s.Listing(), err)
	}
}

// TestTriggerSetKernel61 is what a 6.1 kernel's trigger file of
// sched:sched_process_exec read after these writes (the counts before
// any firing): the hists after the others, oldest first; a hist that
// differs from one there only in size refused.
func TestTriggerSetKernel61(t *testing.T) {
	var s TriggerSet
	for _, w := range []string{
		"hist:keys=common_pid if common_pid < 0",
		"stacktrace:2 if common_pid < 0",
		"hist:keys=common_pid.execname",
		"traceon:3 if common_pid < 0",
		"hist:keys=common_pid:size=4096 if common_pid < 0",
		"enable_hist:sched:sched_switch:2",
		"!hist:keys=common_pid.execname",
		"enable_event:sched:sched_switch:5",
	} {
		tr, err := ParseTrigger("-R", w)
		if err != nil {
			t.Fatalf("ParseTrigger(%q) = %+v", w, err)
		}
		err = s.Apply(tr)
		if strings.Contains(w, "size=4096") {
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(e.Msg, "Hist trigger already exists: ") {
				t.Errorf("Apply(%q) = %v, want Hist trigger already exists", w, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Apply(%q) = %+v", w, err)
		}
	}
	want := `enable_event:sched:sched_switch:count=5
enable_hist:sched:sched_switch:count=2
traceon:count=3 if common_pid < 0
stacktrace:count=2 if common_pid < 0
hist:keys=common_pid:vals=hitcount:sort=hitcount:size=2048 if common_pid < 0 [active]
`
	if got := s.Listing(); got != want {
		t.Errorf("Listing() =\n%s\nwant\n%s", got, want)
	}
}

func TestTriggerSetApply(t *testing.T) {
	tests := []struct {
		writes   []string // the last one is checked
		msg      string   // "" for no error
		off, end int
		listing  string // with no error: the listing after
	}{
		// gtrace's exceptions (§12.15): these coexist.
		{[]string{"traceon", "traceoff"}, "", 0, 0, "traceoff:unlimited\ntraceon:unlimited\n"},
		{[]string{"enable_event:kmem:kmalloc", "disable_event:kmem:kmalloc:1"}, "", 0, 0,
			"disable_event:kmem:kmalloc:count=1\nenable_event:kmem:kmalloc:unlimited\n"},
		{[]string{"enable_hist:kmem:kmalloc", "disable_hist:kmem:kmalloc"}, "", 0, 0,
			"disable_hist:kmem:kmalloc:unlimited\nenable_hist:kmem:kmalloc:unlimited\n"},
		{[]string{"enable_event:kmem:kmalloc", "enable_event:kmem:kfree"}, "", 0, 0,
			"enable_event:kmem:kfree:unlimited\nenable_event:kmem:kmalloc:unlimited\n"},
		{[]string{"hist:keys=pid", "hist:keys=pid if pid == 1", "hist:keys=comm"}, "", 0, 0,
			"hist:keys=pid:vals=hitcount:sort=hitcount:size=2048 [active]\n" +
				"hist:keys=pid:vals=hitcount:sort=hitcount:size=2048 if pid == 1 [active]\n" +
				"hist:keys=comm:vals=hitcount:sort=hitcount:size=2048 [active]\n"},
		// One per event (§3.3).
		{[]string{"traceoff:1", "traceoff if pid == 1"}, "File exists: the event already has a trigger traceoff:count=1", 0, 8, ""},
		{[]string{"stacktrace", "stacktrace:5"}, "File exists: the event already has a trigger stacktrace:unlimited", 0, 10, ""},
		{[]string{"snapshot", " snapshot"}, "File exists: the event already has a trigger snapshot:unlimited", 1, 9, ""},
		{[]string{"enable_event:kmem:kmalloc:2", "enable_event:kmem:kmalloc"},
			"File exists: the event already has a trigger enable_event:kmem:kmalloc:count=2", 0, 25, ""},
		{[]string{"hist:keys=pid:size=256", "hist:keys=pid"},
			"Hist trigger already exists: hist:keys=pid:vals=hitcount:sort=hitcount:size=256", 0, 13, ""},
		// Removal (§3.4), by command itself and target.
		{[]string{"traceon", "traceoff", "!traceon"}, "", 0, 0, "traceoff:unlimited\n"},
		{[]string{"stacktrace:5 if pid > 1", "!stacktrace"}, "", 0, 0, triggerEmpty},
		{[]string{"stacktrace:5 if pid > 1", "!stacktrace:5 if pid>1"}, "", 0, 0, triggerEmpty},
		{[]string{"enable_event:kmem:kmalloc", "enable_event:kmem:kfree", "!enable_event:kmem:kmalloc"}, "", 0, 0,
			"enable_event:kmem:kfree:unlimited\n"},
		{[]string{"hist:keys=pid if pid == 1", "!hist:keys=pid:size=4096 if pid == 1"}, "", 0, 0, triggerEmpty},
		{[]string{"traceoff", "!traceon"}, "no trigger to remove: the event has no traceon", 0, 8, ""},
		{[]string{"enable_event:kmem:kmalloc", "!disable_event:kmem:kmalloc"},
			"no trigger to remove: the event has no disable_event:kmem:kmalloc", 0, 27, ""},
		{[]string{"enable_event:kmem:kmalloc", "!enable_event:kmem:kfree"},
			"no trigger to remove: the event has no enable_event:kmem:kfree", 0, 24, ""},
		{[]string{"hist:keys=pid if pid == 1", "!hist:keys=pid"},
			"no trigger to remove: the event has no hist:keys=pid:vals=hitcount:sort=hitcount:size=2048", 0, 14, ""},
		{[]string{"stacktrace:5", "!stacktrace:4"}, "the count does not match the trigger removed, stacktrace:count=5", 12, 13, ""},
		{[]string{"stacktrace", "!stacktrace:4"}, "the count does not match the trigger removed, stacktrace:unlimited", 12, 13, ""},
		{[]string{"stacktrace if pid > 1", "!stacktrace if pid > 2"},
			"the filter does not match the trigger removed, stacktrace:unlimited if pid > 1", 15, 22, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.writes, " / "), func(t *testing.T) {
			s, err := applyTriggers(t, tt.writes...)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("Apply = %+v", err)
				}
				if got := s.Listing(); got != tt.listing {
					t.Errorf("Listing() =\n%s\nwant\n%s", got, tt.listing)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Apply = %v, want *Error %q", err, tt.msg)
			}
			last := tt.writes[len(tt.writes)-1]
			if e.Msg != tt.msg || e.Off != tt.off || e.End != tt.end || e.Src != last {
				t.Errorf("Apply(%q) = %q at %d:%d of %q, want %q at %d:%d", last, e.Msg, e.Off, e.End, e.Src, tt.msg, tt.off, tt.end)
			}
			if n := len(s.Triggers()); n != len(tt.writes)-1 {
				t.Errorf("after the error the set holds %d triggers, want %d", n, len(tt.writes)-1)
			}
		})
	}
}

func TestTriggerBind(t *testing.T) {
	kmalloc := readTestFormat(t, "kmem.kmalloc")
	lookup := func(system, event string) (*Format, bool) {
		if system == "kmem" && event == "kmalloc" {
			return kmalloc, true
		}
		return nil, false
	}
	tests := []struct {
		src      string
		msg      string
		off, end int
	}{
		{"traceoff if bytes_req > 4096", "", 0, 0},
		{"enable_event:kmem:kmalloc:1 if node == 0", "", 0, 0},
		{"hist:keys=call_site if bytes_req > 1", "", 0, 0},
		{"stacktrace", "", 0, 0},
		{"traceoff if bytes > 4096", "Field not found: \"bytes\" in kmem:kmalloc", 12, 17},
		{"hist:keys=call_site if bytes > 1", "Field not found: \"bytes\" in kmem:kmalloc", 23, 28},
		{"disable_event:kmem:kmallc", "no event kmem:kmallc", 14, 25},
	}
	for _, tt := range tests {
		tr, err := ParseTrigger("-R", tt.src)
		if err != nil {
			t.Fatalf("ParseTrigger(%q) = %+v", tt.src, err)
		}
		bt, err := tr.Bind(kmalloc, lookup)
		if tt.msg == "" {
			if err != nil {
				t.Errorf("Bind(%q) = %+v", tt.src, err)
				continue
			}
			if (bt.Filter != nil) != (tr.Filter != nil) || (bt.Target != nil) != tr.Cmd.HasTarget() || bt.Trigger != tr {
				t.Errorf("Bind(%q) = %+v", tt.src, bt)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Bind(%q) = %v, want *Error %q", tt.src, err, tt.msg)
			continue
		}
		if !strings.HasPrefix(e.Msg, tt.msg) || e.Off != tt.off || e.End != tt.end || e.Src != tt.src {
			t.Errorf("Bind(%q) = %q at %d:%d of %q, want %q at %d:%d", tt.src, e.Msg, e.Off, e.End, e.Src, tt.msg, tt.off, tt.end)
		}
	}
}
