package tracefs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/pkg/parse"
)

// The places tracefs lives, in the order gtrace tries them.
const (
	defaultRoot = "/sys/kernel/tracing"
	debugRoot   = "/sys/kernel/debug/tracing"
)

// ErrNoEvent is wrapped by errors about events that do not exist.
var ErrNoEvent = errors.New("no such event")

// FS is a mounted tracefs.
type FS struct {
	Root string // the mount point, e.g. /sys/kernel/tracing
	// KallsymsPath is the file Kallsyms reads; "" means /proc/kallsyms.
	// Tests point it at a copy.
	KallsymsPath string
}

// Event names one trace event.
type Event struct {
	System string
	Name   string
}

func (e Event) String() string { return e.System + ":" + e.Name }

// At returns an FS rooted at dir without checking or mounting anything.
// Tests use it with a copy of a tracefs tree.
func At(dir string) *FS { return &FS{Root: dir} }

// Open finds tracefs, mounting it when it is not mounted yet (a fresh
// machine has it unmounted). Mounting needs CAP_SYS_ADMIN.
func Open() (*FS, error) {
	if root := mountedRoot(); root != "" {
		return &FS{Root: root}, nil
	}
	if _, err := os.Stat(filepath.Join(defaultRoot, "events")); errors.Is(err, fs.ErrPermission) {
		return nil, fmt.Errorf("read tracefs at %s: %w: gtrace needs root (or CAP_BPF, CAP_PERFMON and read access to %s)", defaultRoot, err, defaultRoot)
	}
	err := unix.Mount("nodev", defaultRoot, "tracefs", 0, "")
	if err == nil {
		return &FS{Root: defaultRoot}, nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return nil, fmt.Errorf("mount tracefs on %s: %w: gtrace needs root or CAP_SYS_ADMIN to mount it (or mount it yourself: mount -t tracefs nodev %s)", defaultRoot, err, defaultRoot)
	}
	// Older kernels: tracefs under debugfs.
	if _, serr := os.Stat("/sys/kernel/debug"); serr == nil {
		if derr := unix.Mount("nodev", "/sys/kernel/debug", "debugfs", 0, ""); derr == nil || errors.Is(derr, unix.EBUSY) {
			if isTracefs(debugRoot) {
				return &FS{Root: debugRoot}, nil
			}
		}
	}
	return nil, fmt.Errorf("mount tracefs on %s: %w: the kernel needs CONFIG_TRACING and CONFIG_EVENT_TRACING", defaultRoot, err)
}

// mountedRoot returns a tracefs mount point that holds events/, or "".
func mountedRoot() string {
	for _, dir := range []string{defaultRoot, debugRoot} {
		if isTracefs(dir) {
			return dir
		}
	}
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == "tracefs" && isTracefs(fields[1]) {
			return fields[1]
		}
	}
	return ""
}

func isTracefs(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "events"))
	return err == nil && st.IsDir()
}

// Path returns the path of a file below the tracefs root.
func (t *FS) Path(elem ...string) string {
	return filepath.Join(append([]string{t.Root}, elem...)...)
}

// ReadFile reads a file below the tracefs root.
func (t *FS) ReadFile(elem ...string) ([]byte, error) {
	return os.ReadFile(t.Path(elem...))
}

// Events lists every event that has a format file, sorted by system then
// name.
func (t *FS) Events() ([]Event, error) {
	systems, err := os.ReadDir(t.Path("events"))
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	var evs []Event
	for _, s := range systems {
		if !s.IsDir() {
			continue
		}
		ents, err := os.ReadDir(t.Path("events", s.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			// A dynamic event's system (kprobes, uprobes, synthetic)
			// removed since the listing above: it has no events now.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list events of %s: %w", s.Name(), err)
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(t.Path("events", s.Name(), e.Name(), "format")); err != nil {
				continue
			}
			evs = append(evs, Event{System: s.Name(), Name: e.Name()})
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].System != evs[j].System {
			return evs[i].System < evs[j].System
		}
		return evs[i].Name < evs[j].Name
	})
	return evs, nil
}

// Match returns the events that a trace-cmd style pattern names:
// "SYS:EVENT", "SYS:*", "*:EVENT", "EVENT" (any system) or "SYS" (a whole
// system), each part a shell glob. An error wrapping ErrNoEvent, with the
// closest event names as a hint, is returned when nothing matches.
func (t *FS) Match(pattern string) ([]Event, error) {
	all, err := t.Events()
	if err != nil {
		return nil, err
	}
	sysPat, evPat, qualified := strings.Cut(pattern, ":")
	if !qualified {
		sysPat, evPat = "*", pattern
	}
	var out []Event
	for _, e := range all {
		if globMatch(sysPat, e.System) && globMatch(evPat, e.Name) {
			out = append(out, e)
		}
	}
	if len(out) == 0 && !qualified {
		// A bare word may name a whole system, as in trace-cmd -e sched.
		for _, e := range all {
			if globMatch(pattern, e.System) {
				out = append(out, e)
			}
		}
	}
	if len(out) == 0 {
		return nil, &EventError{Pattern: pattern, Suggestions: closest(pattern, all, 3)}
	}
	return out, nil
}

// Lookup resolves a single event name ("SYS:EVENT" or a unique "EVENT").
func (t *FS) Lookup(name string) (Event, error) {
	if strings.ContainsAny(name, "*?[") {
		return Event{}, fmt.Errorf("event %q: a single event is needed here, not a pattern", name)
	}
	evs, err := t.Match(name)
	if err != nil {
		return Event{}, err
	}
	if len(evs) > 1 {
		names := make([]string, len(evs))
		for i, e := range evs {
			names[i] = e.String()
		}
		return Event{}, fmt.Errorf("event %q is ambiguous: %s", name, strings.Join(names, ", "))
	}
	return evs[0], nil
}

// Format reads and parses the format file of an event.
func (t *FS) Format(e Event) (*parse.Format, error) {
	f, _, err := t.ReadFormat(e)
	return f, err
}

// ReadFormat reads the format file of an event and returns it parsed, with
// System set, and its text verbatim. An event without a format file is an
// *EventError.
func (t *FS) ReadFormat(e Event) (*parse.Format, string, error) {
	p := t.Path("events", e.System, e.Name, "format")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		all, _ := t.Events()
		return nil, "", &EventError{Pattern: e.String(), Suggestions: closest(e.String(), all, 3)}
	}
	if err != nil {
		return nil, "", fmt.Errorf("read format of %s: %w", e, err)
	}
	f, err := parse.ParseFormat(path.Join("events", e.System, e.Name, "format"), string(b))
	if err != nil {
		return nil, "", err
	}
	f.System = e.System
	return f, string(b), nil
}

// Kallsyms reads the running kernel's symbols, /proc/kallsyms (or
// KallsymsPath). Without CAP_SYSLOG, or with kernel.kptr_restrict 2, the
// kernel shows every address as zero; package ksym tells.
func (t *FS) Kallsyms() (string, error) {
	p := t.KallsymsPath
	if p == "" {
		p = "/proc/kallsyms"
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read kernel symbols: %w", err)
	}
	return string(b), nil
}

// EventError says that a pattern named no event.
type EventError struct {
	Pattern     string
	Suggestions []string
}

func (e *EventError) Error() string {
	msg := fmt.Sprintf("unknown event %q", e.Pattern)
	if len(e.Suggestions) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(quoteAll(e.Suggestions), ", "))
	}
	return msg + "; gtrace list shows the events"
}

// Unwrap makes errors.Is(err, ErrNoEvent) true.
func (e *EventError) Unwrap() error { return ErrNoEvent }

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

func globMatch(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}
