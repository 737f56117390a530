package parse

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Limits of a hist trigger (grammar §4.1).
const (
	histMaxKeys     = 3
	histMaxVals     = 2 // explicit values besides the implicit hitcount
	histMaxSort     = 2
	histMaxVars     = 16 // variables per hist
	histMaxActions  = 8
	histMaxParams   = 64 // parameters of an action: a synthetic event's fields at most
	histDefaultSize = 2048
	histMinSize     = 128
	histMaxSize     = 131072
)

const (
	histPrefix     = "hist:"
	histValidAttrs = "keys=, vals=, sort=, size=, name=, clock=, nohitcount, NAME=EXPR (a variable) and onmatch(), onmax(), onchange() actions"
	histSizeHint   = "size is a number of entries from 128 to 131072, rounded up to a power of two"
	histSortHint   = "use .ascending or .descending"
	histKeyMods    = "hex, sym, sym-offset, execname, syscall, log2, buckets=N and stacktrace"
	histValMods    = "hex, percent, graph and usecs (on common_timestamp)"
)

// Hints for the kernel's attributes that gtrace refuses or reads its own
// way: a hist of gtrace lives in its own BPF map for as long as the
// command runs, and has no trigger file that a later write could clear.
const (
	histPauseHint = "pause starts the hist paused, cont (the default) counting: an enable_hist or disable_hist trigger switches it; give one of them"
	histNameHint  = "a name is one word: the hists of one name share a table"
	histClearHint = "a hist of gtrace starts empty, and the kernel's clear empties a hist already there, through its trigger file; --interval D --clear prints the hist every D and then clears it; drop %s"
)

// histAssignWords and histAttrWords are the attribute words gtrace
// accepts, for "did you mean" hints.
var (
	histAssignWords = []string{"keys=", "key=", "vals=", "val=", "values=", "sort=", "size=", "name=", "clock="}
	histAttrWords   = slices.Concat(histAssignWords, []string{"nohitcount", "NOHC"})
)

// histLegacy maps the legacy field names to the names the kernel prints.
var histLegacy = map[string]string{
	"cpu":        "common_cpu",
	"CPU":        "common_cpu",
	"stacktrace": "common_stacktrace",
	"STACKTRACE": "common_stacktrace",
}

// histRole is where a field appears: the modifiers it may take depend on it.
type histRole int

const (
	histKey histRole = iota
	histVal
	histVar
)

func (r histRole) String() string {
	switch r {
	case histKey:
		return "key"
	case histVar:
		return "variable"
	}
	return "value"
}

// ParseHist parses a hist trigger in the kernel's syntax (grammar §4),
// "hist:keys=...[:attr]... [if filter]"; the "hist:" command word may be
// left out. name names the input in errors. Every error is a *Error whose
// offsets are those of the offending token in src.
//
// name= names a table that the hists of that name share (package hist
// checks that they fit together). pause starts the hist paused, counting
// nothing until an enable_hist trigger continues it; cont (or continue)
// starts it counting, the default. The kernel's clear (a write that
// empties a hist already there) is refused: a hist of gtrace starts empty.
//
// The filter (after the first word "if" with a blank on each side) is
// parsed with ParseFilter; like every other offset in the spec, the
// offsets of its nodes are byte offsets into src. Keys and values may be
// expressions (grammar §4.4) of fields, common_timestamp, constants and,
// in values and variables, variable references ($var, sys.event.$var).
// NAME=EXPR items define variables (Vars), onmatch(), onmax() and
// onchange() items are actions (Actions), with the kernel's limits and
// messages (§4.5, §4.6); what they refer to (other hists' variables,
// synthetic events, fields) is checked when the hists of a session are
// bound together, not here.
//
// Unlike the kernel, which accepts only .ascending or .descending after a
// sort field, ParseHist also accepts the modifier of the key or value the
// field names (sort=id.syscall.descending), so that what String prints
// parses again.
func ParseHist(name, src string) (*HistSpec, error) {
	p := histParser{name: name, src: src, spec: &HistSpec{Src: src, srcName: name}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.spec, nil
}

// HistFlags is a hist given with gtrace's flags rather than as a
// "hist:..." string: --keys, --vals and --sort (lists, as pflag's string
// slices give them), --size (as typed, judged as size= is; "" for the
// default), --filter and --name.
type HistFlags struct {
	Keys, Vals, Sort   []string
	Size, Filter, Name string
}

// HistFromFlags builds the spec the flags describe: the same as ParseHist
// of the equivalent "hist:..." string, which becomes the spec's Src. A
// blank Filter is left out; a Name is name=. An error names the flag at
// fault (Error.Name "--keys", "--vals", "--sort", "--size", "--filter" or
// "--name"), and its Src and offsets refer to that flag's text, a list
// flag's elements joined with commas.
func HistFromFlags(f HistFlags) (*HistSpec, error) {
	keys := strings.Join(f.Keys, ",")
	if keys == "" {
		return nil, &Error{Name: "--keys", Msg: "missing keys", Hint: "a hist needs at least one key, e.g. --keys common_pid"}
	}
	const listHint = "separate the fields with commas alone"
	p := histParser{name: "hist"}
	var b strings.Builder
	b.WriteString(histPrefix)
	add := func(flag, attr, text string) {
		if b.Len() > len(histPrefix) && flag != "--filter" {
			b.WriteByte(':')
		}
		g := histSeg{flag: flag, text: text, off: b.Len()}
		b.WriteString(attr)
		g.val = b.Len()
		b.WriteString(text)
		p.segs = append(p.segs, g)
	}
	if e := histFlagWord("--keys", keys, listHint); e != nil {
		return nil, e
	}
	add("--keys", "keys=", keys)
	if f.Name != "" {
		if e := histFlagWord("--name", f.Name, histNameHint); e != nil {
			return nil, e
		}
		add("--name", "name=", f.Name)
	}
	if vals := strings.Join(f.Vals, ","); vals != "" {
		if e := histFlagWord("--vals", vals, listHint); e != nil {
			return nil, e
		}
		add("--vals", "vals=", vals)
	}
	if sort := strings.Join(f.Sort, ","); sort != "" {
		if e := histFlagWord("--sort", sort, listHint); e != nil {
			return nil, e
		}
		add("--sort", "sort=", sort)
	}
	if f.Size != "" {
		if e := histFlagWord("--size", f.Size, histSizeHint); e != nil {
			return nil, e
		}
		add("--size", "size=", f.Size)
	}
	if strings.TrimSpace(f.Filter) != "" {
		add("--filter", " if ", f.Filter)
	}
	p.src = b.String()
	p.spec = &HistSpec{Src: p.src, srcName: p.name, segs: p.segs}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.spec, nil
}

// histFlagWord rejects white space and ':' in the text of a flag that
// becomes one attribute of a "hist:..." string.
func histFlagWord(flag, text, hint string) *Error {
	if i := strings.IndexAny(text, ": \t\n\v\f\r"); i >= 0 {
		return Errorf(flag, text, i, i+1, "unexpected %q", text[i:i+1]).WithHint("%s", hint)
	}
	return nil
}

// EffectiveSize returns the number of entries of the table: Size rounded
// up to a power of two, or 2048 when no size was given.
func (s *HistSpec) EffectiveSize() int {
	if s.Size <= 0 {
		return histDefaultSize
	}
	return histPow2(s.Size)
}

// histPow2 rounds n > 0 up to a power of two.
func histPow2(n int) int {
	return 1 << bits.Len(uint(n-1))
}

// String returns the trigger description exactly as the kernel prints it
// in the trigger file and in the hist header (grammar §6.2), without the
// trailing " [active]" or " [paused]": name=, keys=, vals= (hitcount first
// unless nohitcount), sort= (hitcount by default; a key or value with its
// modifier; .descending but never .ascending), size= (the effective
// size), :clock= (EffectiveClock) for a hist that uses common_timestamp,
// :nohitcount and " if " with the filter as typed.
func (s *HistSpec) String() string {
	var b strings.Builder
	b.WriteString(histPrefix)
	if s.Name != "" {
		b.WriteString("name=" + s.Name + ":")
	}
	b.WriteString("keys=")
	for i, k := range s.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k.String())
	}
	b.WriteString(":vals=")
	sep := ""
	if !s.NoHitcount {
		b.WriteString("hitcount")
		sep = ","
	}
	for _, v := range s.Vals {
		b.WriteString(sep + v.String())
		sep = ","
	}
	for i, v := range s.Vars {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(v.Name + "=" + v.Expr.String())
	}
	b.WriteString(":sort=")
	if len(s.Sort) == 0 {
		b.WriteString("hitcount")
	}
	for i, k := range s.Sort {
		if i > 0 {
			b.WriteByte(',')
		}
		if t := s.sortTarget(k.Name); t != nil {
			b.WriteString(t.String())
		} else {
			b.WriteString(k.Name)
		}
		if k.Descending {
			b.WriteString(".descending")
		}
	}
	fmt.Fprintf(&b, ":size=%d", s.EffectiveSize())
	if s.Timestamp() {
		b.WriteString(":clock=" + s.EffectiveClock())
	}
	if s.NoHitcount {
		b.WriteString(":nohitcount")
	}
	for _, a := range s.Actions {
		b.WriteString(":" + a.String())
	}
	if s.FilterText != "" {
		b.WriteString(" if " + s.FilterText)
	}
	return b.String()
}

// WrittenName returns the name of f as written in Src. It differs from
// f.Name only for the legacy names: "cpu" or "CPU" for common_cpu,
// "stacktrace" or "STACKTRACE" for common_stacktrace. The kernel takes a
// legacy name to mean the event's own field when the event has a field of
// that name.
func (s *HistSpec) WrittenName(f HistField) string {
	if f.Off < 0 || f.End > len(s.Src) || f.Off > f.End {
		return f.Name
	}
	name, _, _ := strings.Cut(s.Src[f.Off:f.End], ".")
	return name
}

// sortTarget returns the value, else the key, that a sort entry names (the
// kernel's search order), or nil for hitcount or an unknown name.
func (s *HistSpec) sortTarget(name string) *HistField {
	if name == "hitcount" {
		return nil
	}
	for _, fields := range [][]HistField{s.Vals, s.Keys} {
		for i := range fields {
			if fields[i].Name == name {
				return &fields[i]
			}
		}
	}
	return nil
}

// String returns the field as the kernel prints it in a trigger
// description: the name and its modifier, buckets as .buckets=N.
func (f HistField) String() string {
	switch f.Mod {
	case ModNone:
		return f.Name
	case ModBuckets:
		return f.Name + ".buckets=" + strconv.FormatUint(f.Buckets, 10)
	}
	return f.Name + "." + f.Mod.String()
}

// histSpan is a byte range of the source.
type histSpan struct{ off, end int }

// histSeg is where one flag's text sits in the source that HistFromFlags
// builds.
type histSeg struct {
	flag string // "--keys"
	text string // the flag's text
	off  int    // offset of the attribute word ("keys=", " if ") in the source
	val  int    // offset of text in the source
}

// histParser parses one hist spec.
type histParser struct {
	name  string
	src   string
	spec  *HistSpec
	segs  []histSeg       // HistFromFlags: errors point into the flags
	seen  map[string]bool // assignment attributes given so far
	sorts []histSpan      // sort= entries, resolved once keys and vals are known
	nohc  histSpan        // the nohitcount flag
	clock histSpan        // the clock= attribute
}

// errorf returns an error for src[off:end], or for the same bytes of the
// flag they came from when the source was built by HistFromFlags.
func (p *histParser) errorf(off, end int, format string, args ...any) *Error {
	return locate(p.segs, Errorf(p.name, p.src, off, end, format, args...))
}

// locate moves an error on the source HistFromFlags built to the same
// bytes of the flag they came from.
func locate(segs []histSeg, e *Error) *Error {
	for _, g := range segs {
		if e.Off >= g.off && e.Off <= g.val+len(g.text) {
			return Errorf(g.flag, g.text, e.Off-g.val, e.End-g.val, "%s", e.Msg).WithHint("%s", e.Hint)
		}
	}
	return e
}

func (p *histParser) parse() *Error {
	start, end := histTrim(p.src, 0, len(p.src))
	// Like the kernel, take the command word "hist" up to a ':' or a
	// blank, and skip the blanks after it.
	if rest := p.src[start:end]; rest == "hist" || (strings.HasPrefix(rest, "hist") && strings.IndexByte(": \t", rest[4]) >= 0) {
		start, _ = histTrim(p.src, min(start+len(histPrefix), end), end)
	}
	attrEnd := end
	ifOff := histFindIf(p.src, start, end)
	if ifOff >= 0 {
		_, attrEnd = histTrim(p.src, start, ifOff)
	}
	if e := p.attrs(start, attrEnd); e != nil {
		return e
	}
	if e := p.check(start, attrEnd); e != nil {
		return e
	}
	if ifOff >= 0 {
		return p.filter(ifOff, end)
	}
	return nil
}

// histTrim returns [off, end) without leading and trailing white space.
func histTrim(src string, off, end int) (int, int) {
	for off < end && histIsSpace(src[off]) {
		off++
	}
	for end > off && histIsSpace(src[end-1]) {
		end--
	}
	return off, end
}

func histIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func histIsBlank(c byte) bool { return c == ' ' || c == '\t' }

// histFindIf returns the offset of the first word "if" in src[off:end]
// that has a blank before it and a blank (or the end) after it, or -1.
func histFindIf(src string, off, end int) int {
	for i := off + 1; i+2 <= end; i++ {
		if src[i] == 'i' && src[i+1] == 'f' && histIsBlank(src[i-1]) && (i+2 == end || histIsBlank(src[i+2])) {
			return i
		}
	}
	return -1
}

// filter parses the filter that follows the "if" at ifOff.
func (p *histParser) filter(ifOff, end int) *Error {
	off := ifOff + len("if ")
	if off > end {
		return p.errorf(ifOff, ifOff+len("if"), "missing filter after \"if\"")
	}
	p.spec.FilterText = p.src[off:end]
	p.spec.FilterOff = off
	// Blanks in place of what precedes the filter keep the offsets of
	// the nodes and of the errors those of src.
	expr, err := ParseFilter(p.name, strings.Repeat(" ", off)+p.spec.FilterText)
	if err != nil {
		var fe *Error
		if !errors.As(err, &fe) {
			return p.errorf(off, end, "%v", err)
		}
		e := p.errorf(fe.Off, fe.End, "%s", fe.Msg)
		e.Hint = fe.Hint
		return e
	}
	p.spec.Filter = expr
	return nil
}

// histSplit splits src[off:end] at every sep.
func histSplit(src string, off, end int, sep byte) []histSpan {
	var spans []histSpan
	for {
		i := strings.IndexByte(src[off:end], sep)
		if i < 0 {
			return append(spans, histSpan{off, end})
		}
		spans = append(spans, histSpan{off, off + i})
		off += i + 1
	}
}

// attrs parses the ':'-separated attributes in src[off:end].
func (p *histParser) attrs(off, end int) *Error {
	if off == end {
		return nil
	}
	for _, a := range histSplit(p.src, off, end, ':') {
		if e := p.attr(a.off, a.end); e != nil {
			return e
		}
	}
	return nil
}

func (p *histParser) attr(off, end int) *Error {
	item := p.src[off:end]
	if item == "" {
		return p.errorf(off, off, "empty attribute").WithHint("remove the extra ':'")
	}
	for _, h := range []string{"onmatch(", "onmax(", "onchange("} {
		if strings.HasPrefix(item, h) {
			return p.action(off, end)
		}
	}
	word, _, isAssign := strings.Cut(item, "=")
	if !isAssign {
		return p.flag(off, end)
	}
	val := off + len(word) + 1
	attr := histAssignAttr(word)
	if attr == "" {
		return p.variables(off, end)
	}
	if p.seen[attr] {
		return p.errorf(off, val, "%s= given more than once", attr)
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[attr] = true
	if attr == "clock" {
		val, end = histTrim(p.src, val, end)
	}
	if val == end {
		return p.errorf(off, val, "missing value after %q", word+"=")
	}
	switch attr {
	case "keys":
		return p.keys(val, end)
	case "vals":
		return p.vals(val, end)
	case "sort":
		return p.sort(val, end)
	case "size":
		return p.size(val, end)
	case "name":
		return p.tableName(val, end)
	case "clock":
		name := p.src[val:end]
		if !slices.Contains(histClocks, name) {
			e := p.errorf(val, end, "unknown clock %q", name)
			if s := Nearest(name, histClocks); s != "" {
				return e.WithHint("did you mean %q? clocks are %s", s, strings.Join(histClocks, ", "))
			}
			return e.WithHint("clocks are %s", strings.Join(histClocks, ", "))
		}
		p.spec.Clock = name
		p.clock = histSpan{off, end}
	}
	return nil
}

// histClocks are the kernel's trace clocks (the trace_clock file).
var histClocks = []string{"local", "global", "counter", "uptime", "perf", "mono", "mono_raw", "boot", "tai", "x86-tsc"}

// DefaultClock is the clock of common_timestamp when clock= is not given:
// the clock gtrace record stamps events with by default (the kernel's is
// global, which BPF cannot read).
const DefaultClock = "mono"

// Timestamp reports whether a key or value uses common_timestamp.
func (s *HistSpec) Timestamp() bool {
	for _, f := range slices.Concat(s.Keys, s.Vals) {
		if f.Timestamp() {
			return true
		}
	}
	for _, v := range s.Vars {
		if v.Expr.Timestamp() {
			return true
		}
	}
	return false
}

// EffectiveClock returns the clock of the hist's common_timestamp: Clock,
// or DefaultClock when none was given.
func (s *HistSpec) EffectiveClock() string {
	if s.Clock == "" {
		return DefaultClock
	}
	return s.Clock
}

// tableName takes the name= of a table shared by the hists of that name: any
// text without white space.
func (p *histParser) tableName(off, end int) *Error {
	for i := off; i < end; i++ {
		if histIsSpace(p.src[i]) {
			return p.errorf(off, end, "invalid name %q", p.src[off:end]).WithHint("%s", histNameHint)
		}
	}
	p.spec.Name, p.spec.NameOff = p.src[off:end], off
	return nil
}

// histAssignAttr returns the canonical name of an assignment attribute
// ("keys" for "key"), or "" if word is not one.
func histAssignAttr(word string) string {
	switch word {
	case "keys", "key":
		return "keys"
	case "vals", "val", "values":
		return "vals"
	case "sort", "size", "name", "clock":
		return word
	}
	return ""
}

func (p *histParser) flag(off, end int) *Error {
	switch word := p.src[off:end]; word {
	case "pause", "cont", "continue":
		if p.spec.Pause || p.spec.Cont {
			return p.errorf(off, end, "%s after pause or cont", word).WithHint(histPauseHint)
		}
		p.spec.Pause, p.spec.Cont = word == "pause", word != "pause"
		p.spec.PauseOff, p.spec.PauseEnd = off, end
	case "clear":
		return p.errorf(off, end, "clear empties a hist already there").WithHint(histClearHint, word)
	case "nohitcount", "NOHC":
		p.spec.NoHitcount = true
		p.nohc = histSpan{off, end}
	default:
		e := p.errorf(off, end, "unknown attribute %q", word)
		if s := Nearest(word, histAttrWords); s != "" {
			return e.WithHint("did you mean %q? valid attributes are %s", s, histValidAttrs)
		}
		return e.WithHint("valid attributes are %s", histValidAttrs)
	}
	return nil
}

// variables parses an item of variable assignments, name=expr[,...]
// (the kernel splits the item at ',' and each part at its first '=').
func (p *histParser) variables(off, end int) *Error {
	for _, sp := range histSplit(p.src, off, end, ',') {
		text := p.src[sp.off:sp.end]
		name, _, ok := strings.Cut(text, "=")
		val := sp.off + len(name) + 1
		switch {
		case !ok || name == "":
			return p.errorf(sp.off, sp.end, "malformed assignment").WithHint("a variable is NAME=EXPR")
		case val == sp.end:
			return p.errorf(sp.off, val, "empty assignment").WithHint("give the variable a value: %s=EXPR", name)
		case !histIsIdent(name):
			return p.errorf(sp.off, val-1, "invalid variable name %q", name).WithHint("a name is letters, digits and '_', not starting with a digit")
		}
		for _, v := range p.spec.Vars {
			if v.Name == name {
				return p.errorf(sp.off, val-1, "variable already defined").WithHint("%s is defined at column %d", name, v.Off+1)
			}
		}
		if len(p.spec.Vars) == histMaxVars {
			return p.errorf(sp.off, sp.end, "too many variables defined (max = %d)", histMaxVars)
		}
		f, e := p.field(histSpan{val, sp.end}, histVar)
		if e != nil {
			return e
		}
		p.spec.Vars = append(p.spec.Vars, HistVar{Name: name, Off: sp.off, End: sp.end, Expr: f})
	}
	return nil
}

func (p *histParser) keys(off, end int) *Error {
	for i, sp := range histSplit(p.src, off, end, ',') {
		if i == histMaxKeys {
			return p.errorf(sp.off, end, "too many keys (max = %d)", histMaxKeys)
		}
		f, e := p.field(sp, histKey)
		if e != nil {
			return e
		}
		p.spec.Keys = append(p.spec.Keys, f)
	}
	return nil
}

func (p *histParser) vals(off, end int) *Error {
	for _, sp := range histSplit(p.src, off, end, ',') {
		if p.src[sp.off:sp.end] == "hitcount" {
			continue
		}
		if len(p.spec.Vals) == histMaxVals {
			return p.errorf(sp.off, end, "too many values (max = %d besides hitcount)", histMaxVals)
		}
		f, e := p.field(sp, histVal)
		if e != nil {
			return e
		}
		p.spec.Vals = append(p.spec.Vals, f)
	}
	return nil
}

// field parses one key or value: a field name with at most one modifier.
func (p *histParser) field(sp histSpan, role histRole) (HistField, *Error) {
	text := p.src[sp.off:sp.end]
	switch {
	case text == "":
		return HistField{}, p.errorf(sp.off, sp.off, "empty %s", role).WithHint("remove the extra ','")
	case role == histKey && strings.Contains(text, "$"):
		i := sp.off + strings.IndexByte(text, '$')
		return HistField{}, p.errorf(i, sp.end, "using variable references in keys not supported").
			WithHint("a key is a field of the event; a variable of another hist is read with the key values it was set with")
	}
	if op, _ := histOperator(p.src, sp.off, sp.end); op != 0 {
		n := 0
		return p.expr(sp, role, &n, true)
	}
	if histIsDigit(text[0]) {
		return HistField{}, p.errorf(sp.off, sp.end, "a constant alone cannot be a %s", role).
			WithHint("a constant is the same for every event: use it in an expression, e.g. FIELD*2")
	}
	return p.operand(sp, role, false)
}

// histOperator finds the operator at the root of the expression in
// src[off:end] as the kernel's contains_operator does: the rightmost '-'
// or '+', else the rightmost '/' or '*', which makes the operators left
// associative and '*' and '/' bind tighter than '+' and '-'. A '-' that is
// the first byte and the only '-' is the unary -(...): op 'n', as is a
// text that is all one -(...), which the kernel refuses. The '-' of
// .sym-offset is no operator. op is 0 when there is none.
func histOperator(src string, off, end int) (op byte, at int) {
	text := strings.ReplaceAll(src[off:end], ".sym-offset", ".sym_offset")
	minus, plus := strings.LastIndexByte(text, '-'), strings.LastIndexByte(text, '+')
	switch {
	case minus == 0, histParenthesized(text):
		return 'n', off
	case minus >= 0 || plus >= 0:
		if plus > minus {
			return '+', off + plus
		}
		return '-', off + minus
	}
	div, mul := strings.LastIndexByte(text, '/'), strings.LastIndexByte(text, '*')
	switch {
	case div >= 0 && div > mul:
		return '/', off + div
	case mul >= 0:
		return '*', off + mul
	}
	return 0, -1
}

// histParenthesized reports whether text is "-(...)" with the
// parentheses around all the rest: a unary minus that the kernel takes
// for a binary one when "..." has a '-' of its own.
func histParenthesized(text string) bool {
	if !strings.HasPrefix(text, "-(") || !strings.HasSuffix(text, ")") {
		return false
	}
	depth := 0
	for i := 1; i < len(text)-1; i++ {
		switch text[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return false
			}
		}
	}
	return true
}

// histMaxSubexprs is the most operators an expression may have.
const histMaxSubexprs = 3

// expr parses the expression in sp, n counting its operators so far, as
// the kernel's parse_expr does: no parentheses but those of a unary
// -(...), which may only stand at the top.
func (p *histParser) expr(sp histSpan, role histRole, n *int, top bool) (HistField, *Error) {
	op, at := histOperator(p.src, sp.off, sp.end)
	if op == 0 {
		if sp.off == sp.end {
			return HistField{}, p.errorf(sp.off, sp.off, "missing operand").WithHint("an expression is FIELD OP FIELD or constant, with OP one of + - * /")
		}
		if histIsDigit(p.src[sp.off]) {
			return p.constant(sp)
		}
		return p.operand(sp, role, true)
	}
	if *n == histMaxSubexprs {
		return HistField{}, p.errorf(at, at+1, "too many subexpressions (%d max)", histMaxSubexprs)
	}
	*n++
	f := HistField{Op: op, Off: sp.off, End: sp.end}
	if op == 'n' {
		if !top {
			return HistField{}, p.errorf(at, at+1, "unary minus not supported in sub-expressions")
		}
		if sp.end-sp.off < 3 || p.src[sp.off+1] != '(' || p.src[sp.end-1] != ')' {
			return HistField{}, p.errorf(sp.off, sp.end, "invalid unary minus").WithHint("write -(EXPR), with the parentheses")
		}
		o, e := p.expr(histSpan{sp.off + 2, sp.end - 1}, role, n, false)
		if e != nil {
			return HistField{}, e
		}
		f.Operands = []HistField{o}
		f.Name = "-(" + o.String() + ")"
		return f, nil
	}
	l, e := p.expr(histSpan{sp.off, at}, role, n, false)
	if e != nil {
		return HistField{}, e
	}
	r, e := p.expr(histSpan{at + 1, sp.end}, role, n, false)
	if e != nil {
		return HistField{}, e
	}
	if !l.HasRef() && !r.HasRef() && l.Usecs() != r.Usecs() {
		return HistField{}, p.errorf(sp.off, sp.end, "timestamp units in expression don't match").
			WithHint("both operands of %q must be in .usecs, or neither", string(op))
	}
	if op == '/' && r.Const && r.Value == 0 {
		return HistField{}, p.errorf(at+1, sp.end, "division by zero")
	}
	f.Operands = []HistField{l, r}
	f.Name = l.String() + string(op) + r.String()
	return f, nil
}

// constant parses a numeric literal of an expression, in any base the
// kernel's kstrtoull accepts; the kernel prints it in decimal.
func (p *histParser) constant(sp histSpan) (HistField, *Error) {
	v, ok := histParseUint(p.src[sp.off:sp.end])
	if !ok {
		return HistField{}, p.errorf(sp.off, sp.end, "expecting numeric literal")
	}
	return HistField{Name: strconv.FormatUint(v, 10), Const: true, Value: v, Off: sp.off, End: sp.end}, nil
}

func histIsDigit(c byte) bool { return c >= '0' && c <= '9' }

// operand parses a field name with at most one modifier; in an expression
// (inExpr) the only modifier is common_timestamp's .usecs.
func (p *histParser) operand(sp histSpan, role histRole, inExpr bool) (HistField, *Error) {
	text := p.src[sp.off:sp.end]
	if strings.Contains(text, "$") {
		return p.ref(sp)
	}
	name, mod, hasMod := strings.Cut(text, ".")
	nameEnd := sp.off + len(name)
	if name == "" {
		return HistField{}, p.errorf(sp.off, sp.off+1, "missing field name before '.'")
	}
	if !histIsIdent(name) {
		return HistField{}, p.errorf(sp.off, nameEnd, "invalid field name %q", name)
	}
	f := HistField{Name: name, Off: sp.off, End: sp.end}
	if canon, ok := histLegacy[name]; ok {
		f.Name = canon
	}
	switch {
	case inExpr && (f.Name == "hitcount" || f.Name == "common_stacktrace"):
		return HistField{}, p.errorf(sp.off, nameEnd, "%s cannot be an operand in an expression", f.Name)
	case f.Name == "hitcount" && role == histKey:
		return HistField{}, p.errorf(sp.off, nameEnd, "hitcount cannot be a key").WithHint("hitcount is always counted; it is a value")
	case f.Name == "common_stacktrace" && role == histVal:
		return HistField{}, p.errorf(sp.off, nameEnd, "common_stacktrace cannot be a value").WithHint("use it as a key, or save it in a variable")
	case f.Name == "hitcount" && role == histVar:
		return HistField{}, p.errorf(sp.off, nameEnd, "hitcount cannot be a variable").WithHint("a variable holds a field, common_timestamp or an expression of the event")
	}
	if !hasMod {
		return f, nil
	}
	m, n, ok := histParseMod(mod)
	if ok && histModValid(role, f.Name, m) && (!inExpr || m == ModUsecs) {
		f.Mod, f.Buckets = m, n
		return f, nil
	}
	modOff, modEnd := nameEnd+1, sp.end
	if mod == "" {
		modOff--
	}
	hint := histModHint(role, f.Name, mod, m, ok)
	if ok && inExpr && histModValid(role, f.Name, m) {
		hint = "an operand of an expression takes no modifier but common_timestamp's .usecs"
	}
	return HistField{}, p.errorf(modOff, modEnd, "invalid field modifier").WithHint("%s", hint)
}

// histParseMod parses a modifier: one of the names of HistMod, or
// buckets=N (or bucket=N) with N > 0 in any base the kernel accepts.
func histParseMod(s string) (HistMod, uint64, bool) {
	for m := ModHex; m <= ModStacktrace; m++ {
		if m != ModBuckets && s == m.String() {
			return m, 0, true
		}
	}
	if rest, ok := strings.CutPrefix(s, "bucket"); ok {
		if num, ok := strings.CutPrefix(strings.TrimPrefix(rest, "s"), "="); ok {
			if n, ok := histParseUint(num); ok && n > 0 {
				return ModBuckets, n, true
			}
		}
	}
	return ModNone, 0, false
}

// histModValid reports whether modifier m is valid on field name as a key
// or a value (the table of grammar §4.3).
func histModValid(role histRole, name string, m HistMod) bool {
	switch {
	case role == histVar:
		return m == ModUsecs && name == "common_timestamp" || m == ModHex
	case name == "common_stacktrace":
		return false
	case name == "hitcount":
		return m == ModPercent || m == ModGraph
	case m == ModUsecs:
		return name == "common_timestamp"
	case m == ModExecname:
		return name == "common_pid"
	case role == histKey:
		switch m {
		case ModHex, ModSym, ModSymOffset, ModSyscall, ModLog2, ModBuckets, ModStacktrace:
			return true
		}
		return false
	}
	return m == ModHex || m == ModPercent || m == ModGraph
}

// histModHint says why modifier text (parsed as m if ok) is invalid.
func histModHint(role histRole, name, text string, m HistMod, ok bool) string {
	switch {
	case name == "common_stacktrace":
		return "common_stacktrace takes no modifier"
	case name == "hitcount":
		return "hitcount takes .percent or .graph"
	case !ok && strings.HasPrefix(text, "bucket"):
		return "write buckets=N with a number N > 0"
	case role == histVar && ok:
		return "a variable takes no modifier but common_timestamp's .usecs (and .hex)"
	case !ok:
		valid := "key modifiers are " + histKeyMods
		if role != histKey {
			valid = "value modifiers are " + histValMods
		}
		if s := Nearest(text, histModNames[1:]); s != "" {
			return fmt.Sprintf("did you mean %q? %s", s, valid)
		}
		return valid
	case m == ModExecname:
		return "execname applies to common_pid only"
	case m == ModUsecs:
		return "usecs applies to common_timestamp only"
	case role == histKey:
		return m.String() + " applies to values only"
	}
	return m.String() + " applies to keys only"
}

// histIsIdent reports whether s is a C identifier, like an event field.
func histIsIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return s != ""
}

// histParseUint parses a number as the kernel's kstrtoul with base 0 does:
// 0x or 0X for hex, a leading 0 for octal, else decimal.
func histParseUint(s string) (uint64, bool) {
	base := 10
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' || strings.Contains(s, "_") {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

func (p *histParser) sort(off, end int) *Error {
	for i, sp := range histSplit(p.src, off, end, ',') {
		if i == histMaxSort {
			return p.errorf(sp.off, end, "too many sort fields (max = %d)", histMaxSort)
		}
		if sp.off == sp.end {
			return p.errorf(sp.off, sp.off, "empty sort field").WithHint("remove the extra ','")
		}
		if p.src[sp.off] == '.' {
			return p.errorf(sp.off, sp.end, "empty sort field").WithHint("name a key, a value or hitcount")
		}
		p.sorts = append(p.sorts, sp)
	}
	return nil
}

func (p *histParser) size(off, end int) *Error {
	text := p.src[off:end]
	n, ok := histParseUint(text)
	if !ok {
		return p.errorf(off, end, "invalid size %q", text).WithHint(histSizeHint)
	}
	if n > histMaxSize || histPow2(int(n)) < histMinSize {
		return p.errorf(off, end, "size %s out of range", text).WithHint(histSizeHint)
	}
	p.spec.Size = int(n)
	return nil
}

// check does what needs all the attributes: keys are given, nohitcount
// has another value, the sort entries name keys or values.
func (p *histParser) check(off, end int) *Error {
	s := p.spec
	if len(s.Keys) == 0 {
		e := p.errorf(off, end, "missing keys")
		for _, v := range s.Vars {
			if w := Nearest(v.Name+"=", histAssignWords); w != "" && len(v.Name) >= 3 && Distance(v.Name+"=", w) <= 2 {
				return p.errorf(v.Off, v.Off+len(v.Name), "missing keys").WithHint("did you mean %q? %s= defines a variable", w, v.Name)
			}
		}
		return e.WithHint("a hist needs keys=, e.g. hist:keys=common_pid")
	}
	if s.Clock != "" && !s.Timestamp() {
		s.ClockOff, s.ClockEnd = p.clock.off, p.clock.end
		return p.errorf(p.clock.off, p.clock.end, "clock= applies only to a hist that uses common_timestamp").
			WithHint("drop it, or use common_timestamp as a key or value")
	}
	s.ClockOff, s.ClockEnd = p.clock.off, p.clock.end
	if s.NoHitcount && len(s.Vals) == 0 {
		return p.errorf(p.nohc.off, p.nohc.end, "nohitcount requires a value other than hitcount").
			WithHint("add one, e.g. vals=hitcount.percent or vals=FIELD")
	}
	for _, sp := range p.sorts {
		k, e := p.sortKey(sp)
		if e != nil {
			return e
		}
		s.Sort = append(s.Sort, k)
	}
	return nil
}

// sortKey resolves one sort entry: NAME[.MODIFIER][.ascending|.descending]
// where NAME is hitcount, a value or a key, and MODIFIER, accepted so that
// String's output parses, must be that of the value or key.
func (p *histParser) sortKey(sp histSpan) (SortKey, *Error) {
	name, rest, hasDot := strings.Cut(p.src[sp.off:sp.end], ".")
	nameEnd := sp.off + len(name)
	k := SortKey{Name: name, Off: sp.off, End: sp.end}
	if canon, ok := histLegacy[name]; ok {
		k.Name = canon
	}
	t := p.spec.sortTarget(k.Name)
	if t == nil && k.Name != "hitcount" {
		e := p.errorf(sp.off, nameEnd, "sort field must be a key or a val")
		names := p.sortNames()
		if s := Nearest(name, names); s != "" {
			return SortKey{}, e.WithHint("did you mean %q?", s)
		}
		return SortKey{}, e.WithHint("sort by %s", strings.Join(names, ", "))
	}
	if !hasDot {
		return k, nil
	}
	mod := rest
	switch {
	case rest == "ascending":
		return k, nil
	case rest == "descending":
		k.Descending = true
		return k, nil
	case strings.HasSuffix(rest, ".ascending"):
		mod = strings.TrimSuffix(rest, ".ascending")
	case strings.HasSuffix(rest, ".descending"):
		mod = strings.TrimSuffix(rest, ".descending")
		k.Descending = true
	}
	m, n, ok := histParseMod(mod)
	if t == nil || !ok || m != t.Mod || n != t.Buckets {
		if mod == "" {
			return SortKey{}, p.errorf(nameEnd, nameEnd+1, "invalid sort modifier").WithHint(histSortHint)
		}
		return SortKey{}, p.errorf(nameEnd+1, nameEnd+1+len(mod), "invalid sort modifier").WithHint(histSortHint)
	}
	return k, nil
}

// sortNames lists what a sort entry may name.
func (p *histParser) sortNames() []string {
	names := []string{"hitcount"}
	for _, fields := range [][]HistField{p.spec.Vals, p.spec.Keys} {
		for _, f := range fields {
			if !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
	}
	return names
}

// ref parses a variable reference: $var, or sys.event.$var.
func (p *histParser) ref(sp histSpan) (HistField, *Error) {
	text := p.src[sp.off:sp.end]
	dollar := strings.IndexByte(text, '$')
	r := HistRef{Var: text[dollar+1:]}
	if dollar > 0 {
		qual := text[:dollar]
		sys, ev, ok := strings.Cut(strings.TrimSuffix(qual, "."), ".")
		if !strings.HasSuffix(qual, ".") || !ok || !histIsIdent(sys) || !histIsIdent(ev) {
			return HistField{}, p.errorf(sp.off, sp.off+dollar, "invalid subsystem or event name").
				WithHint("a variable of another event's hist is SYSTEM.EVENT.$NAME")
		}
		r.System, r.Event = sys, ev
	}
	if name, mod, hasMod := strings.Cut(r.Var, "."); hasMod {
		at := sp.off + dollar + 1 + len(name)
		return HistField{}, p.errorf(at, at+1+len(mod), "invalid field modifier").
			WithHint("a variable reference takes no modifier: the variable's own applies")
	}
	if !histIsIdent(r.Var) {
		return HistField{}, p.errorf(sp.off+dollar, sp.end, "invalid variable reference %q", text[dollar:]).
			WithHint("a reference is $NAME, NAME letters, digits and '_'")
	}
	return HistField{Name: r.String(), Ref: &r, Off: sp.off, End: sp.end}, nil
}

// action parses a handler action, HANDLER(ARG).ACTION(PARAMS) (grammar
// §4.5), with the kernel's messages.
func (p *histParser) action(off, end int) *Error {
	item := p.src[off:end]
	open := strings.IndexByte(item, '(')
	a := HistAction{Off: off, End: end}
	switch item[:open] {
	case "onmatch":
		a.Handler = OnMatch
	case "onmax":
		a.Handler = OnMax
	default:
		a.Handler = OnChange
	}
	closing := strings.IndexByte(item, ')')
	if closing < 0 {
		return p.errorf(off+open, end, "no closing paren found").WithHint("write %s(...).ACTION(...)", a.Handler)
	}
	argOff, argEnd := off+open+1, off+closing
	arg := p.src[argOff:argEnd]
	if a.Handler == OnMatch {
		sys, ev, ok := strings.Cut(arg, ".")
		switch {
		case !ok:
			return p.errorf(argOff, argEnd, "missing subsystem").WithHint("onmatch names the event that set the variables: onmatch(SYSTEM.EVENT)")
		case !histIsIdent(sys) || !histIsIdent(ev):
			return p.errorf(argOff, argEnd, "invalid subsystem or event name").WithHint("onmatch(SYSTEM.EVENT), e.g. onmatch(sched.sched_waking)")
		}
		a.System, a.Event = sys, ev
	} else {
		name, ok := strings.CutPrefix(arg, "$")
		if !ok || !histIsIdent(name) {
			return p.errorf(argOff, argEnd, "for onmax(x) or onchange(x), x must be a variable").
				WithHint("name a variable of this hist: %s($NAME)", a.Handler)
		}
		a.Var, a.VarOff = name, argOff+1
	}
	rest := off + closing + 1
	if rest == end || p.src[rest] != '.' || rest+1 == end {
		return p.errorf(off, rest, "no action found").WithHint("follow %s(...) with .ACTION(...): trace(), a synthetic event, save() or snapshot()", a.Handler)
	}
	nameOff := rest + 1
	paren := strings.IndexByte(p.src[nameOff:end], '(')
	if paren < 0 || p.src[end-1] != ')' {
		return p.errorf(nameOff, end, "no closing paren found").WithHint("an action is NAME(PARAMS)")
	}
	nameEnd := nameOff + paren
	name := p.src[nameOff:nameEnd]
	if !histIsIdent(name) {
		return p.errorf(nameOff, nameEnd, "invalid action %q", name).WithHint("an action is trace(), save(), snapshot() or a synthetic event's name")
	}
	params, e := p.params(nameEnd+1, end-1)
	if e != nil {
		return e
	}
	switch name {
	case "save":
		a.Kind = ActSave
		if len(params) == 0 {
			return p.errorf(nameOff, end, "no params found for save()").WithHint("save(FIELD,...) saves fields of the event with each new max or change")
		}
		for _, q := range params {
			if q.Ref != nil || q.System != "" {
				return p.errorf(q.Off, q.End, "invalid action param").WithHint("save() takes fields of this event")
			}
		}
		for _, o := range p.spec.Actions {
			if o.Kind == ActSave {
				return p.errorf(nameOff, end, "can't have more than one save() action per hist")
			}
		}
	case "snapshot":
		a.Kind = ActSnapshot
		if len(params) > 0 {
			return p.errorf(params[0].Off, end-1, "too many action params").WithHint("snapshot() takes none")
		}
	case "trace":
		a.Kind, a.TraceKw = ActTrace, true
		if len(params) == 0 || params[0].Field == "" || params[0].System != "" {
			return p.errorf(nameOff, end, "invalid action param").WithHint("trace(SYNTHETIC_EVENT,PARAMS...) names the synthetic event first")
		}
		a.Synth, a.SynthOff = params[0].Text, params[0].Off
		params = params[1:]
	default:
		a.Kind, a.Synth, a.SynthOff = ActTrace, name, nameOff
	}
	if a.Handler == OnMatch && a.Kind != ActTrace {
		return p.errorf(nameOff, nameEnd, "handler doesn't support action").WithHint("onmatch() takes trace() or a synthetic event; save() and snapshot() go with onmax() or onchange()")
	}
	if len(p.spec.Actions) == histMaxActions {
		return p.errorf(off, end, "too many actions (max = %d)", histMaxActions)
	}
	a.Params = params
	p.spec.Actions = append(p.spec.Actions, a)
	return nil
}

// params parses the comma-separated parameters of an action in
// src[off:end]: $var, sys.event.$var, field or sys.event.field.
func (p *histParser) params(off, end int) ([]HistParam, *Error) {
	if off == end {
		return nil, nil
	}
	var out []HistParam
	for _, sp := range histSplit(p.src, off, end, ',') {
		if len(out) == histMaxParams {
			return nil, p.errorf(sp.off, end, "too many action params (max = %d)", histMaxParams)
		}
		text := p.src[sp.off:sp.end]
		q := HistParam{Text: text, Off: sp.off, End: sp.end}
		if strings.Contains(text, "$") {
			f, e := p.ref(sp)
			if e != nil {
				return nil, e
			}
			q.Ref, q.System, q.Event = f.Ref, f.Ref.System, f.Ref.Event
			out = append(out, q)
			continue
		}
		parts := strings.Split(text, ".")
		switch {
		case len(parts) == 1 && histIsIdent(parts[0]):
			q.Field = parts[0]
		case len(parts) == 3 && histIsIdent(parts[0]) && histIsIdent(parts[1]) && histIsIdent(parts[2]):
			q.System, q.Event, q.Field = parts[0], parts[1], parts[2]
		default:
			return nil, p.errorf(sp.off, sp.end, "invalid action param").
				WithHint("a param is $VAR, FIELD, SYSTEM.EVENT.$VAR or SYSTEM.EVENT.FIELD")
		}
		out = append(out, q)
	}
	return out, nil
}
