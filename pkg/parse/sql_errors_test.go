package parse

import (
	"errors"
	"strings"
	"testing"
)

// sqlErrorTests are bad statements (and options) with the message and
// the text under the caret.
var sqlErrorTests = []struct {
	src   string
	opts  SQLOptions
	msg   string
	caret string
}{
	{src: "", msg: "expected SELECT at the start, found the end of the statement", caret: ""},
	{src: "SELEC pid FROM sched_waking", msg: "expected SELECT at the start, found 'SELEC'", caret: "SELEC"},
	{src: "SELECT FROM sched_waking", msg: "expected a field, found FROM", caret: "FROM"},
	{src: "SELECT pid sched_waking", msg: "expected FROM after the selection, found the end of the statement", caret: ""},
	{src: "SELECT pid, FROM sched_waking", msg: "expected a field, found FROM", caret: "FROM"},
	{src: "SELECT from FROM kmalloc", msg: "expected a field, found FROM", caret: "from"},
	{src: "SELECT (start.a * end.b) AS x FROM e", msg: "only + and - of two fields are possible here", caret: "*"},
	{src: "SELECT (start.pid - end.pid AS x FROM e", msg: "expected ')' to close the parenthesis, found AS", caret: "AS"},
	{src: "SELECT pid FROM sched_waking AS", msg: "expected an alias after AS, found the end of the statement", caret: ""},
	{src: "SELECT pid FROM sched_waking AS s.t", msg: "an alias is a plain name, without '.'", caret: "s.t"},
	{src: "SELECT pid FROM sched_waking JOIN sched_switch", msg: "expected ON after the JOIN event, found the end of the statement", caret: ""},
	{src: "SELECT a.pid FROM sched_waking AS a JOIN sched_switch AS b ON a.pid < b.next_pid", msg: "expected '=' between the fields of ON, found '<'", caret: "<"},
	{src: "SELECT pid FROM sched_waking WHERE pid", msg: "expected a comparison (== != < <= > >= & ~), found the end of the statement", caret: ""},
	{src: "SELECT pid FROM sched_waking WHERE pid == end", msg: "expected a number or a \"string\" after '==', found 'end'", caret: "end"},
	{src: "SELECT pid FROM sched_waking WHERE comm == \"x", msg: "unterminated string", caret: "\"x"},
	{src: "SELECT pid FROM sched_waking WHERE pid == 12x", msg: "bad number \"12x\"", caret: "12x"},
	{src: "SELECT pid FROM sched_waking WHERE pid ~ 1", msg: "'~' compares with a string glob, not a number", caret: "1"},
	{src: "SELECT pid FROM sched_waking WHERE (pid == 1", msg: "expected ')' to close the parenthesis, found the end of the statement", caret: ""},
	{src: "SELECT pid FROM sched_waking WHERE pid == 1 pid", msg: "expected '&&', '||' or the end of the statement, found 'pid'", caret: "pid"},
	{src: "SELECT pid FROM sched_waking; DROP", msg: "unexpected character ';'", caret: ";"},
	{src: "SELECT \\ FROM e", msg: "a backslash must be followed by a field name", caret: "\\"},

	// Bound to the formats.
	{src: "SELECT pid FROM sched_wakin", msg: "event not found", caret: "sched_wakin"},
	{src: "SELECT pdi FROM sched_waking", msg: "Field 'pdi' not part of event sched_waking", caret: "pdi"},
	{src: "SELECT s.pid, (e.TIMESTAMP - s.TIMESTAMP) AS lat FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.nxt_pid", msg: "Field 'nxt_pid' not part of event sched_switch", caret: "e.nxt_pid"},
	{src: "SELECT x.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "'x.pid' is not a field of either event", caret: "x.pid"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS s ON s.pid = s.next_pid", msg: "alias \"s\" is the FROM event's too", caret: "s"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = s.prio", msg: "'s.pid' and 's.prio' must be a field for each event: 'sched_switch' and 'sched_waking'", caret: "s.prio"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.prev_comm", msg: "Field 's.pid' is not compatible to match field 'e.prev_comm'", caret: "s.pid"},
	{src: "SELECT (e.TIMESTAMP - s.TIMESTAMP) FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "Field calculations must be labeled 'AS name'", caret: "(e.TIMESTAMP - s.TIMESTAMP)"},
	{src: "SELECT TIMESTAMP_DELTA FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "Field calculations must be labeled 'AS name'", caret: "TIMESTAMP_DELTA"},
	{src: "SELECT (e.next_pid - e.prev_pid) AS d FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "'e.next_pid' and 'e.prev_pid' must be a field for each event", caret: "e.prev_pid"},
	{src: "SELECT (e.TIMESTAMP - s.pid) AS d FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "'e.TIMESTAMP' is not compatible to compare with 's.pid'", caret: "e.TIMESTAMP"},
	{src: "SELECT (e.prev_comm - s.comm) AS d FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "'e.prev_comm' is not a number: calculations are on numbers", caret: "e.prev_comm"},
	{src: "SELECT CAST(s.pid AS hex) FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "CAST makes a histogram key: it is for a statement without JOIN", caret: "hex"},
	{src: "SELECT s.TIMESTAMP_USECS FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "'common_timestamp.usecs' cannot name a synthetic field", caret: "s.TIMESTAMP_USECS"},
	{src: "SELECT s.TIMESTAMP FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "'common_timestamp' cannot name a synthetic field", caret: "s.TIMESTAMP"},
	{src: "SELECT s.pid, e.prev_pid AS pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", msg: "the synthetic event has a field 'pid' already", caret: "e.prev_pid"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid WHERE s.prio < 1 || e.prev_prio < 1", msg: "'e.prev_prio' is of sched_switch, and can not be grouped or '||' together with a field of sched_waking", caret: "e.prev_prio"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid WHERE s.comm < \"a\"", msg: "Field 'comm' is a string: compare it with ==, != or ~", caret: "s.comm"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid WHERE s.comm == 1", msg: "Field 'comm' is a string and is compared with a \"string\"", caret: "1"},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid WHERE s.prio == \"1\"", msg: "Field 'prio' is a number and is compared with a number", caret: "\"1\""},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", opts: SQLOptions{OnMax: "lat", Snapshot: true}, msg: "'lat' is not a variable", caret: ""},
	{src: "SELECT s.pid FROM sched_waking AS s JOIN sched_switch AS e ON s.pid = e.next_pid", opts: SQLOptions{OnChange: "pid", Save: []string{"prev_pdi"}}, msg: "-S: Field 'prev_pdi' not part of event sched_switch", caret: ""},
	{src: "SELECT common_pid FROM kmalloc", opts: SQLOptions{OnMax: "x", Snapshot: true}, msg: "-m, -c, -s, -S and -T act on a synthetic event: they need a statement with JOIN", caret: ""},
	{src: "SELECT CAST(bytes_req AS _COUNTER_) FROM kmalloc", msg: "Not all SELECT items can be of type _COUNTER_", caret: "_COUNTER_"},
	{src: "SELECT CAST(bytes_req AS execname) FROM kmalloc", msg: "'execname' is only allowed for common_pid", caret: "execname"},
	{src: "SELECT CAST(bytes_req AS loq) FROM kmalloc", msg: "Cast of 'bytes_req' to unknown type 'loq'", caret: "loq"},
	{src: "SELECT (bytes_req - bytes_alloc) AS d FROM kmalloc", msg: "Simple SQL (without JOIN/ON) do not allow comparisons", caret: "bytes_req"},
	{src: "SELECT bytes_req AS b FROM kmalloc", msg: "a histogram's keys are not named: AS is for a statement with JOIN", caret: "b"},
}

func TestSQLErrors(t *testing.T) {
	events := sqlFormats(t)
	for _, tt := range sqlErrorTests {
		t.Run(tt.src, func(t *testing.T) {
			err := compileSQL(tt.src, events, tt.opts)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("CompileSQL(%q) = %v, want an *Error", tt.src, err)
			}
			if e.Msg != tt.msg || tt.src[e.Off:e.End] != tt.caret {
				t.Errorf("CompileSQL(%q) = %q under %q, want %q under %q", tt.src, e.Msg, tt.src[e.Off:e.End], tt.msg, tt.caret)
			}
		})
	}
}

func compileSQL(src string, events SQLEvents, o SQLOptions) error {
	st, err := ParseSQL(src)
	if err != nil {
		return err
	}
	_, err = CompileSQL(st, events, o)
	return err
}

// TestSQLErrorCaret shows a whole error as gtrace prints it.
func TestSQLErrorCaret(t *testing.T) {
	err := compileSQL("SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.nextpid", sqlFormats(t), SQLOptions{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("CompileSQL = %v, want an *Error", err)
	}
	want := `sql:1:85: Field 'nextpid' not part of event sched_switch
  SELECT start.pid FROM sched_waking AS start JOIN sched_switch AS end ON start.pid = end.nextpid
                                                                                      ^~~~~~~~~~~
  hint: did you mean "next_pid"?`
	if got := e.Caret(); got != want {
		t.Errorf("Caret() =\n%s\nwant\n%s", got, want)
	}
}

// FuzzParseSQL checks, for any statement: no panic; exactly one of a
// statement and an error; errors are *Error inside the input; and what a
// statement compiles to, the kernel's synthetic event and hist parsers
// take.
func FuzzParseSQL(f *testing.F) {
	seedFiles(f, "sql", func(text string) []string {
		_, stmt, _ := strings.Cut(strings.TrimSuffix(text, "\n"), "\n")
		return []string{stmt}
	})
	for _, tt := range sqlErrorTests {
		f.Add(tt.src)
	}
	events := sqlFormats(f)
	f.Fuzz(func(t *testing.T, src string) {
		st, err := ParseSQL(src)
		if (st == nil) == (err == nil) {
			t.Fatalf("ParseSQL(%q) = %v, %v: want exactly one of statement and error", src, st, err)
		}
		inside := func(err error) {
			var e *Error
			if !errors.As(err, &e) || e.Src != src || e.Off < 0 || e.Off > e.End || e.End > len(src) {
				t.Fatalf("ParseSQL/CompileSQL(%q) = %v, want an *Error inside the input", src, err)
			}
		}
		if err != nil {
			inside(err)
			return
		}
		p, err := CompileSQL(st, events, SQLOptions{Name: "fuzz", Salt: 1})
		if (p == nil) == (err == nil) {
			t.Fatalf("CompileSQL(%q) = %v, %v: want exactly one of plan and error", src, p, err)
		}
		if err != nil {
			inside(err)
			return
		}
		if p.Synth != "" {
			if _, err := ParseSynth("synth", p.Synth); err != nil {
				t.Fatalf("CompileSQL(%q) makes %q: %v", src, p.Synth, err)
			}
		}
		for _, h := range p.Hists {
			if _, err := ParseHist("hist", h.Trigger); err != nil {
				t.Fatalf("CompileSQL(%q) makes %q: %v", src, h.Trigger, err)
			}
		}
	})
}
