package parse

import (
	"errors"
	"strconv"
	"strings"
)

const (
	triggerCountHint  = "a count is a number of firings, decimal, 0x hex or 0 octal: traceon:5"
	triggerTargetHint = "write %s:SYSTEM:EVENT[:N], e.g. %s:sched:sched_switch"
	triggerFilterHint = "a filter follows the word if: traceoff if common_pid == 42"
)

// ParseTrigger parses one event trigger as written to an event's trigger
// file (grammar §3.1):
//
//	[!]traceon[:N] [if FILTER]          and traceoff, snapshot, stacktrace
//	[!]enable_event:SYS:EVENT[:N] [if FILTER]
//	                                    and disable_event, enable_hist, disable_hist
//	[!]hist:ATTRS [if FILTER]           (ParseHist)
//
// Blanks around the whole are skipped, as the kernel strips a write. The
// command word ends at the first ':', blank or tab; a count or SYS:EVENT
// follows a ':' directly and ends at a blank or tab; the filter follows
// the word "if" and one blank. name names the input in errors. Every error
// is a *Error whose offsets are those of the offending token in src.
//
// gtrace is stricter than the kernel where the kernel accepts and ignores:
// "traceon 5" (a count without its ':') and "traceon:5:x" (text after the
// count) are errors, not a count of 5; so is an empty count ("traceon:").
// A count is read as the kernel's kstrtoul with base 0 reads it: 0x hex, a
// leading 0 octal, else decimal.
func ParseTrigger(name, src string) (*Trigger, error) {
	p := triggerParser{t: &Trigger{Src: src, Name: name}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.t, nil
}

type triggerParser struct {
	t *Trigger
}

func (p *triggerParser) errorf(off, end int, format string, args ...any) *Error {
	return p.t.Errorf(off, end, format, args...)
}

func (p *triggerParser) parse() *Error {
	src := p.t.Src
	start, end := histTrim(src, 0, len(src))
	if start == end {
		return p.errorf(start, end, "empty trigger").WithHint("a trigger is one of %s", strings.Join(triggerCmdNames[:], ", "))
	}
	p.t.Off = start
	if src[start] == '!' {
		p.t.Remove = true
		start++
	}
	w := start
	for w < end && src[w] != ':' && !histIsBlank(src[w]) {
		w++
	}
	word := src[start:w]
	p.t.CmdOff, p.t.CmdEnd = start, w
	cmd := -1
	for i, n := range triggerCmdNames {
		if n == word {
			cmd = i
		}
	}
	if cmd < 0 {
		if word == "" && p.t.Remove {
			return p.errorf(start, w, "missing trigger command after '!'").WithHint("remove a trigger as it was written: !traceoff")
		}
		if word == "" {
			return p.errorf(start, w, "missing trigger command").WithHint("a trigger is one of %s", strings.Join(triggerCmdNames[:], ", "))
		}
		e := p.errorf(start, w, "unknown trigger command %q", word)
		if n := Nearest(word, triggerCmdNames[:]); n != "" {
			return e.WithHint("did you mean %s?", n)
		}
		return e.WithHint("a trigger is one of %s", strings.Join(triggerCmdNames[:], ", "))
	}
	p.t.Cmd = TriggerCmd(cmd)
	if p.t.Cmd == TrigHist {
		return p.hist()
	}
	pos := w
	if pos < end && src[pos] == ':' {
		pos++
		pe := pos
		for pe < end && !histIsBlank(src[pe]) {
			pe++
		}
		if e := p.param(pos, pe); e != nil {
			return e
		}
		pos = pe
	} else if p.t.Cmd.HasTarget() {
		return p.errorf(w, w, "missing SYSTEM:EVENT after %q", word).WithHint(triggerTargetHint, word, word)
	}
	for pos < end && histIsBlank(src[pos]) {
		pos++
	}
	if pos == end {
		return nil
	}
	return p.filter(pos, end)
}

// hist parses a hist trigger with ParseHist, on a copy of the source with
// blanks in place of what precedes the command word.
func (p *triggerParser) hist() *Error {
	src := p.t.Src
	padded := strings.Repeat(" ", p.t.CmdOff) + src[p.t.CmdOff:]
	spec, err := ParseHist(p.t.Name, padded)
	if err != nil {
		return p.relocate(err)
	}
	p.t.Hist = spec
	p.t.Filter, p.t.FilterText, p.t.FilterOff = spec.Filter, spec.FilterText, spec.FilterOff
	return nil
}

// relocate turns an error on a padded copy of the source into the same
// error on the source itself.
func (p *triggerParser) relocate(err error) *Error {
	var e *Error
	if !errors.As(err, &e) {
		return p.errorf(p.t.CmdOff, len(p.t.Src), "%v", err)
	}
	r := p.errorf(e.Off, e.End, "%s", e.Msg)
	r.Hint = e.Hint
	return r
}

// param parses the text after the command word's ':', src[off:end]: a
// count, or SYS:EVENT[:N].
func (p *triggerParser) param(off, end int) *Error {
	src, word := p.t.Src, p.t.Cmd.String()
	if !p.t.Cmd.HasTarget() {
		return p.count(off, end)
	}
	if off == end {
		return p.errorf(off, off, "missing SYSTEM:EVENT after \"%s:\"", word).WithHint(triggerTargetHint, word, word)
	}
	sysEnd := off + strings.IndexByte(src[off:end]+":", ':')
	if sysEnd == off {
		return p.errorf(off, off, "missing system before ':'").WithHint(triggerTargetHint, word, word)
	}
	if sysEnd == end {
		return p.errorf(off, end, "missing event after system %q", src[off:end]).WithHint(triggerTargetHint, word, word)
	}
	evOff := sysEnd + 1
	evEnd := evOff + strings.IndexByte(src[evOff:end]+":", ':')
	if evEnd == evOff {
		return p.errorf(evOff, evOff, "missing event after \"%s:\"", src[off:sysEnd]).WithHint(triggerTargetHint, word, word)
	}
	p.t.Target = TriggerTarget{System: src[off:sysEnd], Event: src[evOff:evEnd], Off: off, End: evEnd}
	if evEnd == end {
		return nil
	}
	return p.count(evEnd+1, end)
}

// count parses the count src[off:end].
func (p *triggerParser) count(off, end int) *Error {
	src := p.t.Src
	if off == end {
		return p.errorf(off, off, "missing count after ':'").WithHint("%s", triggerCountHint)
	}
	if !isDigit(src[off]) {
		e := p.errorf(off, end, "expected a count after ':', found %q", src[off:end])
		if strings.HasPrefix(src[off:end], "if") {
			return e.WithHint("a filter follows a blank, not a ':': %s if ...", p.t.Cmd)
		}
		return e.WithHint("%s", triggerCountHint)
	}
	ce := off + strings.IndexByte(src[off:end]+":", ':')
	if ce < end {
		return p.errorf(ce, end, "unexpected %q after the count", src[ce:end]).WithHint("%s", triggerCountHint)
	}
	n, ne := parseFilterNumber(src[off:ce])
	if ne != nil {
		return p.errorf(off, ce, "invalid count %s", ne.msg).WithHint("%s", ne.hint)
	}
	p.t.HasCount, p.t.Count, p.t.CountOff, p.t.CountEnd = true, n, off, ce
	return nil
}

// filter parses "if FILTER" at src[off:end].
func (p *triggerParser) filter(off, end int) *Error {
	src := p.t.Src
	we := off
	for we < end && !histIsBlank(src[we]) {
		we++
	}
	if src[off:we] != "if" {
		e := p.errorf(off, we, "expected \"if\" and a filter, found %q", src[off:we])
		if isDigit(src[off]) && !p.t.HasCount && !p.t.Cmd.HasTarget() {
			return e.WithHint("a count follows a ':': %s:%s", p.t.Cmd, src[off:we])
		}
		return e.WithHint("%s", triggerFilterHint)
	}
	if we == end {
		return p.errorf(off, we, "missing filter after \"if\"").WithHint("%s", triggerFilterHint)
	}
	fo := we + 1
	p.t.FilterText, p.t.FilterOff = src[fo:end], fo
	// Blanks in place of what precedes the filter keep the offsets of its
	// nodes and of its errors those of src.
	expr, err := ParseFilter(p.t.Name, strings.Repeat(" ", fo)+p.t.FilterText)
	if err != nil {
		return p.relocate(err)
	}
	p.t.Filter = expr
	return nil
}

// String returns the trigger in its canonical form, which ParseTrigger
// parses back to the same trigger: "!" for a removal, the command, the
// target, ":N" in decimal and " if " with the filter as typed; a hist as
// its spec's String.
func (t *Trigger) String() string {
	var b strings.Builder
	if t.Remove {
		b.WriteByte('!')
	}
	if t.Hist != nil {
		b.WriteString(t.Hist.String())
		return b.String()
	}
	b.WriteString(t.Cmd.String())
	if t.Cmd.HasTarget() {
		b.WriteString(":" + t.Target.System + ":" + t.Target.Event)
	}
	if t.HasCount {
		b.WriteString(":" + strconv.FormatUint(t.Count, 10))
	}
	if t.Filter != nil {
		b.WriteString(" if " + t.FilterText)
	}
	return b.String()
}

// Listing returns the trigger's line of the trigger file (grammar §3.5)
// without the newline: the command, the target, ":unlimited" or
// ":count=N" with N the count given (the kernel shows what remains; this
// is the line before any firing) and " if " with the filter as typed. A
// hist lists as its description (§6.2) and " [active]" or " [paused]".
func (t *Trigger) Listing() string {
	if t.Hist != nil {
		state := " [active]"
		if t.Hist.Pause {
			state = " [paused]"
		}
		return t.Hist.String() + state
	}
	var b strings.Builder
	b.WriteString(t.Cmd.String())
	if t.Cmd.HasTarget() {
		b.WriteString(":" + t.Target.System + ":" + t.Target.Event)
	}
	if t.HasCount {
		b.WriteString(":count=" + strconv.FormatUint(t.Count, 10))
	} else {
		b.WriteString(":unlimited")
	}
	if t.Filter != nil {
		b.WriteString(" if " + t.FilterText)
	}
	return b.String()
}
