package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gtrace/gtrace/pkg/parse"
)

// The values of gtrace's flags are checked as pflag parses them, by their
// type: a number against its range, a duration that it is positive, a
// word against its set, a process id that it names a live process. A bad
// value is a *parse.Error on the value, which handleError prints with a
// caret, exit status 2, whatever the flag and the command.

// flagName is how errors name a flag: by its shorthand, the form usage
// and examples use, when it has one.
func flagName(name, short string) string {
	if short != "" {
		return "-" + short
	}
	return "--" + name
}

// intValue is an integer flag with a range.
type intValue struct {
	p        *int
	flag     string
	what     string // what the number is, for messages: "buffer size"
	min, max int
	hint     string // the range, for people: "want 1 to 4194304 KiB per CPU"
}

// intFlag defines an integer flag whose values must lie in [min, max].
func intFlag(f *pflag.FlagSet, p *int, name, short string, def, min, max int, what, hint, usage string) {
	*p = def
	f.VarP(&intValue{p: p, flag: flagName(name, short), what: what, min: min, max: max, hint: hint}, name, short, usage)
}

func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return parse.Errorf(v.flag, s, 0, len(s), "invalid %s: not a number", v.what).WithHint("%s", v.hint)
	}
	if err != nil || n < int64(v.min) || n > int64(v.max) {
		return parse.Errorf(v.flag, s, 0, len(s), "%s %s out of range", v.what, s).WithHint("%s", v.hint)
	}
	*v.p = int(n)
	return nil
}

func (v *intValue) String() string { return strconv.Itoa(*v.p) }
func (v *intValue) Type() string   { return "int" }

// durationValue is a duration flag that must be at least min: 0 is not
// "no limit" but a mistake (leave the flag out for no limit).
type durationValue struct {
	p    *time.Duration
	flag string
	min  time.Duration
	hint string
}

// durationFlag defines a duration flag, 0 when not given, whose values
// must be at least min.
func durationFlag(f *pflag.FlagSet, p *time.Duration, name string, min time.Duration, hint, usage string) {
	f.Var(&durationValue{p: p, flag: flagName(name, ""), min: min, hint: hint}, name, usage)
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return parse.Errorf(v.flag, s, 0, len(s), "invalid duration").
			WithHint("a duration is a number with a unit: 500ms, 10s, 1m30s")
	}
	switch {
	case d <= 0:
		return parse.Errorf(v.flag, s, 0, len(s), "duration %s is not positive", d).WithHint("%s", v.hint)
	case d < v.min:
		return parse.Errorf(v.flag, s, 0, len(s), "duration %s is shorter than %s", d, v.min).WithHint("%s", v.hint)
	}
	*v.p = d
	return nil
}

// String is "" for no duration, which help leaves out.
func (v *durationValue) String() string {
	if *v.p == 0 {
		return ""
	}
	return v.p.String()
}

func (v *durationValue) Type() string { return "duration" }

// enumValue is a flag whose value is one of a set of words.
type enumValue struct {
	p     *string
	flag  string
	what  string
	words []string
	note  string // added to the hint, e.g. why a word is missing
}

// enumFlag defines a flag whose values must be one of words.
func enumFlag(f *pflag.FlagSet, p *string, name, short, def string, words []string, what, note, usage string) {
	*p = def
	f.VarP(&enumValue{p: p, flag: flagName(name, short), what: what, words: words, note: note}, name, short, usage)
}

func (v *enumValue) Set(s string) error {
	if !oneOf(s, v.words) {
		e := parse.Errorf(v.flag, s, 0, len(s), "invalid %s %q", v.what, s)
		if v.note != "" {
			return e.WithHint("want one of %s (%s)", strings.Join(v.words, ", "), v.note)
		}
		return e.WithHint("want one of %s", strings.Join(v.words, ", "))
	}
	*v.p = s
	return nil
}

func (v *enumValue) String() string { return *v.p }
func (v *enumValue) Type() string   { return "string" }

// cpusValue is a CPU list flag, such as 0,2-3 (parse.CPUList).
type cpusValue struct {
	p    *[]int
	flag string
	text string
}

func (v *cpusValue) Set(s string) error {
	cpus, err := parse.CPUList(v.flag, s)
	if err != nil {
		return err
	}
	*v.p, v.text = cpus, s
	return nil
}

func (v *cpusValue) String() string { return v.text }
func (v *cpusValue) Type() string   { return "list" }

// maxPID is the largest process id Linux gives (PID_MAX_LIMIT - 1).
const maxPID = 1<<22 - 1

// pidsValue is -P: comma-separated process ids, repeatable. Each must be
// the id of a process that exists when gtrace starts (the id of its
// thread group, which is what -P matches): as perf does, gtrace refuses
// a pid that would count nothing.
type pidsValue struct {
	p       *[]int
	flag    string
	changed bool
	// notRunning, when not nil, receives the error of the first id that
	// is not a running process instead of Set, for a command that
	// judges it later (hist -P over a file names past processes).
	notRunning *error
}

// pidsFlag defines a process id list flag and returns it.
func pidsFlag(f *pflag.FlagSet, p *[]int, name, short, usage string) *pidsValue {
	v := &pidsValue{p: p, flag: flagName(name, short)}
	f.VarP(v, name, short, usage)
	return v
}

func (v *pidsValue) Set(s string) error {
	if !v.changed {
		*v.p = nil
		v.changed = true
	}
	off := 0
	for _, item := range strings.Split(s, ",") {
		end := off + len(item)
		n, err := strconv.Atoi(item)
		switch {
		case err != nil && item == "":
			return parse.Errorf(v.flag, s, off, end, "missing process id").WithHint("give process ids separated by commas: -P 1234,5678")
		case err != nil && !isDigits(strings.TrimPrefix(item, "-")):
			return parse.Errorf(v.flag, s, off, end, "invalid process id %q", item).WithHint("a process id is a number, as ps or pgrep print it")
		case err != nil || n < 1 || n > maxPID:
			return parse.Errorf(v.flag, s, off, end, "process id %s out of range", item).WithHint("process ids are 1 to %d", maxPID)
		}
		if e := processError(n); e != "" {
			err := parse.Errorf(v.flag, s, off, end, "%s", e).WithHint("-P takes the ids of running processes (ps -e or pgrep show them)")
			if v.notRunning == nil {
				return err
			}
			if *v.notRunning == nil {
				*v.notRunning = err
			}
		}
		*v.p = append(*v.p, n)
		off = end + 1
	}
	return nil
}

func (v *pidsValue) String() string {
	s := make([]string, len(*v.p))
	for i, n := range *v.p {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (v *pidsValue) Type() string { return "pids" }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// processError says why pid is not that of a running process, or returns
// "". It reads /proc, and says nothing where /proc is not mounted.
func processError(pid int) string {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return fmt.Sprintf("no process %d", pid)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if tgid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && tgid != pid {
				return fmt.Sprintf("%d is a thread of process %d, not a process (-P %d traces all its threads)", pid, tgid, tgid)
			}
		}
	}
	return ""
}

// checkEventName refuses an empty -e, the one event name that cannot be
// looked up, as every command says it (a usage error: there is no token
// to put a caret under).
func checkEventName(s string) error {
	if s == "" {
		return errors.New("empty event name: give SYS:EVENT, SYS or a glob such as 'sched:*' (gtrace list shows the events)")
	}
	return nil
}

// checkFollow refuses --follow without a process to follow: -- CMD or -P.
func checkFollow(follow bool, command []string, pids []int) error {
	if !follow || len(command) > 0 || len(pids) > 0 {
		return nil
	}
	return parse.Errorf("--follow", "--follow", 0, len("--follow"), "nothing to follow").
		WithHint("--follow needs -- CMD ARGS or -P PID: it traces them and every process they fork")
}
