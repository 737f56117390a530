package parse

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// FuncEventSystem is the system of function events.
const FuncEventSystem = "functions"

// The limits gtrace puts on a function event (the 2018 prototype has
// none of its own but the record's size).
const (
	// funcNameMax is the longest field name, as a probe argument's.
	funcNameMax = probeArgNameMax
	// funcArrayMax is the longest array, as a probe's.
	funcArrayMax = probeArrayMax
	// funcDerefMax is the most dereferences ([N]) of one field.
	funcDerefMax = 8
	// funcOffsetMax bounds every offset and index in bytes.
	funcOffsetMax = 1<<31 - 1
	// funcHeader is the record's size before the fields: the common
	// fields, __parent_ip and __ip.
	funcHeader = CommonSize + 16
)

// FuncEvent is one function based event, as the 2018 prototype's
// function_events took it (grammar §9): FUNC(ARGS) on a kernel function,
// or (gtrace) PATH:FUNC(ARGS) on a function of an executable or library.
// Its event is functions:FUNC.
type FuncEvent struct {
	Src string
	// Path is the file of a user-space function (PATH:FUNC), "" for a
	// kernel function; FileOffset is the function's offset in it once
	// Resolve sets it.
	Path             string
	PathOff, PathEnd int
	FileOffset       uint64
	Resolved         bool

	Func             string
	FuncOff, FuncEnd int

	Fields []FuncField
	// Slots is how many argument registers the fields read (the highest
	// slot read, plus one).
	Slots int

	arch string
}

// FuncType is a function event's type: how a field is read, stored and
// printed.
type FuncType struct {
	Name   string // as written: "int", "x64", "symbol", "string"
	Size   int    // bytes of one value in the record (4 for a string's __data_loc)
	Signed bool   // the C type's signedness (char: the architecture's)
}

// funcTypes are the prototype's types on a 64-bit machine.
var funcTypes = map[string]FuncType{
	"u8": {"u8", 1, false}, "u16": {"u16", 2, false}, "u32": {"u32", 4, false}, "u64": {"u64", 8, false},
	"s8": {"s8", 1, true}, "s16": {"s16", 2, true}, "s32": {"s32", 4, true}, "s64": {"s64", 8, true},
	"x8": {"x8", 1, false}, "x16": {"x16", 2, false}, "x32": {"x32", 4, false}, "x64": {"x64", 8, false},
	"char": {"char", 1, true}, "short": {"short", 2, true}, "int": {"int", 4, true}, "long": {"long", 8, true},
	"size_t": {"size_t", 8, false}, "symbol": {"symbol", 8, false}, "string": {"string", 4, false},
}

const funcTypeList = "u8 u16 u32 u64 s8 s16 s32 s64 x8 x16 x32 x64 char short int long size_t symbol string"

// FuncField is one field of a function event: TYPE NAME with its chain
// of offsets and indexes, from an argument register (Slot), or TYPE
// [NAME=]ADDR at a fixed address (Slot -1).
type FuncField struct {
	Name        string
	DefaultName bool // TYPE ADDR: gtrace names it addr_HEX
	Type        FuncType
	Unsigned    bool
	Array       int // TYPE[N]; 0 for one value
	Slot        int // the argument (0-based); -1 at Addr
	Addr        uint64
	Steps       []FuncStep
	Off, End    int // the field in Src, from its type (or unsigned) on
	RecOff      int // where the field is in the record
	// How the field follows the one before: Nulls NULLs, then '|'
	// (Pipe) or ','.
	Nulls int
	Pipe  bool
}

// FuncStep is one step of a field's chain, as the prototype keeps them:
// Plus bytes added (+N, several summed), then with Deref a read at
// Index*size further ([N]).
type FuncStep struct {
	Plus     uint64
	Deref    bool
	Index    uint64
	Off, End int // the step's tokens in Src
}

// FullName returns "functions:FUNC".
func (e *FuncEvent) FullName() string { return FuncEventSystem + ":" + e.Func }

// User reports whether the event is on a user-space function.
func (e *FuncEvent) User() bool { return e.Path != "" }

// Resolve sets the file offset of a user-space function.
func (e *FuncEvent) Resolve(off uint64) { e.FileOffset, e.Resolved = off, true }

// PlaceError returns an error with the caret on the function's name, or
// with path on a user-space function's path; name names the input.
func (e *FuncEvent) PlaceError(name string, path bool, format string, args ...any) *Error {
	if path && e.User() {
		return Errorf(name, e.Src, e.PathOff, e.PathEnd, format, args...)
	}
	return Errorf(name, e.Src, e.FuncOff, e.FuncEnd, format, args...)
}

// funcTok is one token of a prototype: a run of letters, digits and '_',
// or one other character; blanks only separate tokens.
type funcTok struct {
	s        string
	off, end int
}

func funcTokens(src string, from int) []funcTok {
	var toks []funcTok
	for i := from; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentByte(c):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			toks = append(toks, funcTok{src[i:j], i, j})
			i = j
		default:
			toks = append(toks, funcTok{src[i : i+1], i, i + 1})
			i++
		}
	}
	return toks
}

const funcEventHint = "a function event is FUNC(TYPE NAME, ...), or PATH:FUNC(...) on a user-space function"

// ParseFuncEvent parses a function event's prototype, as the 2018
// prototype's function_events took it (grammar §9), and gtrace's
// PATH:FUNC(ARGS) on a function of an executable or library. Every error
// is an *Error with the caret on the token that is wrong; docs/funcevent.md
// says where gtrace is stricter than the prototype. It does not look at
// the system: catalog checks the function (kallsyms, the file). name
// names the input in errors.
func ParseFuncEvent(name, src string, opt ProbeOptions) (*FuncEvent, error) {
	arch := opt.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	if _, ok := probeArgRegs[arch]; !ok {
		return nil, Errorf(name, src, 0, len(src), "function events on %s are not supported", arch).
			WithHint("gtrace knows the argument registers of %s", strings.Join(probeArchs(), " and "))
	}
	p := &funcParser{name: name, src: src, e: &FuncEvent{Src: src, arch: arch}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.e, nil
}

type funcParser struct {
	name string
	src  string
	e    *FuncEvent
	toks []funcTok
	i    int
	// The argument slots: cnt is the next, used whether a field or NULL
	// took it (a ',' then moves on).
	cnt  int
	used bool
}

func (p *funcParser) errf(off, end int, format string, args ...any) *Error {
	return Errorf(p.name, p.src, off, end, format, args...)
}

// next returns the next token, or one of length 0 at the end.
func (p *funcParser) next() funcTok {
	if p.i >= len(p.toks) {
		return funcTok{off: len(p.src), end: len(p.src)}
	}
	t := p.toks[p.i]
	p.i++
	return t
}

func (p *funcParser) peek() funcTok {
	if p.i >= len(p.toks) {
		return funcTok{off: len(p.src), end: len(p.src)}
	}
	return p.toks[p.i]
}

func (p *funcParser) parse() error {
	from, err := p.parsePath()
	if err != nil {
		return err
	}
	p.toks = funcTokens(p.src, from)
	e := p.e
	t := p.next()
	switch {
	case t.s == "":
		return p.errf(0, len(p.src), "no function event").WithHint("%s", funcEventHint)
	case !isAlpha(t.s[0]) && t.s[0] != '_':
		return p.errf(t.off, t.end, "a function event starts with the function's name").WithHint("%s", funcEventHint)
	}
	e.Func, e.FuncOff, e.FuncEnd = t.s, t.off, t.end
	if t := p.next(); t.s != "(" {
		return p.errf(t.off, t.end, "expected '(' after the function's name").WithHint("%s", funcEventHint)
	}
	if p.peek().s == ")" {
		p.next()
	} else if err := p.parseArgs(); err != nil {
		return err
	}
	if t := p.next(); t.s != "" {
		return p.errf(t.off, len(p.src), "nothing follows the ')' of a function event").WithHint("give one prototype a definition")
	}
	p.layout()
	return nil
}

// parsePath parses PATH: before a user-space function (a '/' before the
// '(' says there is one) and returns where the function's name starts.
func (p *funcParser) parsePath() (int, error) {
	head := p.src
	if i := strings.IndexByte(head, '('); i >= 0 {
		head = head[:i]
	}
	if !strings.Contains(head, "/") {
		return 0, nil
	}
	start := len(head) - len(strings.TrimLeft(head, " \t\n\r"))
	colon := strings.LastIndexByte(head, ':')
	if colon < 0 {
		return 0, p.errf(start, len(strings.TrimRight(head, " \t\n\r")), "a user-space function is PATH:FUNC").
			WithHint("write the file, ':' and the function's name: /usr/bin/app:main(int argc)")
	}
	path := head[start:colon]
	if path == "" || strings.ContainsAny(path, " \t\n\r") {
		return 0, p.errf(start, colon, "a file's path has no blanks").WithHint("write PATH:FUNC(ARGS)")
	}
	p.e.Path, p.e.PathOff, p.e.PathEnd = path, start, colon
	return colon + 1, nil
}

func (p *funcParser) maxArgs() int { return len(probeArgRegs[p.e.arch]) }

func (p *funcParser) archName() string {
	if p.e.arch == "amd64" {
		return "x86-64"
	}
	return p.e.arch
}

// takeSlot checks that the next argument is one the architecture passes
// in a register; t is the token that needs it.
func (p *funcParser) takeSlot(off, end int) error {
	if p.cnt >= p.maxArgs() {
		return p.errf(off, end, "too many arguments: %s passes %d in registers", p.archName(), p.maxArgs()).
			WithHint("a function event reads the arguments the calling convention passes in registers")
	}
	return nil
}

// parseArgs parses ARG { (','|'|') ARG } ')'.
func (p *funcParser) parseArgs() error {
	nulls, pipe := 0, false
	for {
		t := p.next()
		if t.s == "NULL" {
			if pipe {
				return p.errf(t.off, t.end, "NULL after '|'").WithHint("NULL skips a whole argument: write it after ',' or '('")
			}
			if err := p.takeSlot(t.off, t.end); err != nil {
				return err
			}
			p.used = true
			nulls++
			switch s := p.next(); s.s {
			case ")":
				return nil
			case ",":
				p.comma()
				continue
			default:
				return p.errf(s.off, s.end, "expected ',' or ')' after NULL, found %s", quoteTok(s.s)).WithHint("NULL skips one argument: it has no fields to join with '|'")
			}
		}
		f, err := p.parseField(t)
		if err != nil {
			return err
		}
		f.Nulls, f.Pipe = nulls, pipe
		nulls, pipe = 0, false
		p.e.Fields = append(p.e.Fields, f)
		switch s := p.next(); s.s {
		case ")":
			return nil
		case ",":
			p.comma()
		case "|":
			pipe = true
		case "":
			return p.errf(s.off, s.end, "the arguments are not closed with ')'").WithHint("%s", funcEventHint)
		default:
			return p.errf(s.off, s.end, "unexpected %s after field %s", quoteTok(s.s), f.Name).
				WithHint("a field is TYPE NAME[+OFFSET][[INDEX]]...; fields are separated by ',' (next argument) or '|' (same argument)")
		}
	}
}

func (p *funcParser) comma() {
	if p.used {
		p.cnt++
		p.used = false
	}
}

func quoteTok(s string) string {
	if s == "" {
		return "end of input"
	}
	return "'" + s + "'"
}

// parseField parses one field from its first token t.
func (p *funcParser) parseField(t funcTok) (FuncField, error) {
	f := FuncField{Off: t.off, Slot: -1}
	if t.s == "unsigned" {
		f.Unsigned = true
		t = p.next()
	}
	typ, ok := funcTypes[t.s]
	switch {
	case t.s == "" || t.s == ")" && !f.Unsigned:
		return f, p.errf(t.off, t.end, "expected a field").WithHint("a field is TYPE NAME, TYPE NAME=0xADDR or NULL; %s", funcEventHint)
	case !ok:
		return f, p.errf(t.off, t.end, "unknown type %s", quoteTok(t.s)).WithHint("the types are %s, and unsigned before char, short, int or long", funcTypeList)
	case f.Unsigned && t.s != "char" && t.s != "short" && t.s != "int" && t.s != "long":
		return f, p.errf(f.Off, t.end, "unsigned applies to char, short, int and long").WithHint("%s has its own signedness: write it without unsigned", t.s)
	case p.e.User() && t.s == "symbol":
		return f, p.errf(t.off, t.end, "symbol is a kernel address").WithHint("a user-space function's addresses print as x64")
	}
	if t.s == "char" && p.e.arch == "arm64" {
		typ.Signed = false
	}
	if f.Unsigned {
		typ.Signed = false
	}
	f.Type = typ
	f.End = t.end
	if p.peek().s == "[" {
		if err := p.parseArray(&f); err != nil {
			return f, err
		}
	}
	n := p.next()
	switch {
	case strings.HasPrefix(n.s, "0x") || strings.HasPrefix(n.s, "0X"):
		if err := p.parseAddr(&f, n); err != nil {
			return f, err
		}
		f.Name, f.DefaultName = "addr_"+strings.ToLower(n.s[2:]), true
		return f, p.checkName(f, n)
	case n.s == "" || !(isAlpha(n.s[0]) || n.s[0] == '_'):
		return f, p.errf(n.off, n.end, "expected a field name after the type, found %s", quoteTok(n.s)).WithHint("a name is letters, digits and '_', and does not start with a digit")
	}
	f.Name, f.End = n.s, n.end
	if err := p.checkName(f, n); err != nil {
		return f, err
	}
	if p.peek().s == "=" {
		p.next()
		a := p.next()
		if !strings.HasPrefix(a.s, "0x") && !strings.HasPrefix(a.s, "0X") {
			return f, p.errf(a.off, a.end, "expected an address after '=', found %s", quoteTok(a.s)).WithHint("a field at a fixed address is TYPE NAME=0xHEX")
		}
		return f, p.parseAddr(&f, a)
	}
	if err := p.takeSlot(f.Off, n.end); err != nil {
		return f, err
	}
	f.Slot, p.used = p.cnt, true
	return f, p.parseChain(&f)
}

// parseArray parses TYPE '[' N ']'.
func (p *funcParser) parseArray(f *FuncField) error {
	open := p.next()
	if f.Type.Name == "string" {
		return p.errf(open.off, open.end, "string has no arrays").WithHint("string is a pointer to a nul-terminated string; char[N] reads N bytes")
	}
	n := p.next()
	v, ok := kstrtoull(n.s, 0)
	switch {
	case !ok || n.s == "" || !isDigit(n.s[0]):
		return p.errf(n.off, n.end, "expected an array size, found %s", quoteTok(n.s)).WithHint("an array is TYPE[N], N from 1 to %d", funcArrayMax)
	case v == 0 || v > funcArrayMax:
		return p.errf(n.off, n.end, "array size %s is out of range", n.s).WithHint("an array is TYPE[N], N from 1 to %d", funcArrayMax)
	}
	if c := p.next(); c.s != "]" {
		return p.errf(c.off, c.end, "expected ']' after the array size, found %s", quoteTok(c.s)).WithHint("an array is TYPE[N]")
	}
	f.Array = int(v)
	return nil
}

// parseAddr parses a fixed address, 0x and hex digits.
func (p *funcParser) parseAddr(f *FuncField, a funcTok) error {
	v, ok := kstrtoull(a.s, 16)
	if !ok || len(a.s) < 3 {
		return p.errf(a.off, a.end, "bad address %s", quoteTok(a.s)).WithHint("an address is 0x and hexadecimal digits")
	}
	f.Addr, f.End = v, a.end
	return nil
}

// checkName checks a field's name: a C name, not too long, not the
// record's own and not an earlier field's.
func (p *funcParser) checkName(f FuncField, n funcTok) error {
	switch {
	case len(f.Name) > funcNameMax:
		return p.errf(n.off, n.end, "field name is too long").WithHint("a field name has at most %d characters", funcNameMax)
	case strings.HasPrefix(f.Name, "common_") || f.Name == "__ip" || f.Name == "__parent_ip":
		return p.errf(n.off, n.end, "%s is a field of every function event", f.Name).WithHint("give the field another name")
	}
	for _, g := range p.e.Fields {
		if g.Name == f.Name {
			return p.errf(n.off, n.end, "field %s is named twice", f.Name).WithHint("each field has a name of its own: x64 skb | int skb_len+128[0]")
		}
	}
	return nil
}

// parseChain parses { '+' N | '[' N ']' } after a field's name, steps
// merged as the prototype merges them.
func (p *funcParser) parseChain(f *FuncField) error {
	derefs := 0
	for {
		switch p.peek().s {
		case "+":
			op := p.next()
			v, n, err := p.number(op, "an offset")
			if err != nil {
				return err
			}
			if k := len(f.Steps); k > 0 && !f.Steps[k-1].Deref {
				s := &f.Steps[k-1]
				if s.Plus+v > funcOffsetMax {
					return p.errf(op.off, n.end, "offset is too big").WithHint("offsets add up to at most %d", funcOffsetMax)
				}
				s.Plus += v
				s.End = n.end
			} else {
				f.Steps = append(f.Steps, FuncStep{Plus: v, Off: op.off, End: n.end})
			}
			f.End = n.end
		case "[":
			op := p.next()
			if derefs == funcDerefMax {
				return p.errf(op.off, op.end, "too many dereferences").WithHint("a field has at most %d [N]", funcDerefMax)
			}
			derefs++
			v, n, err := p.number(op, "an index")
			if err != nil {
				return err
			}
			if v*uint64(f.Type.Size) > funcOffsetMax {
				return p.errf(n.off, n.end, "index is too big").WithHint("an index times the type's size is at most %d", funcOffsetMax)
			}
			c := p.next()
			if c.s != "]" {
				return p.errf(c.off, c.end, "expected ']' after the index, found %s", quoteTok(c.s)).WithHint("an index is [N]")
			}
			if k := len(f.Steps); k > 0 && !f.Steps[k-1].Deref {
				s := &f.Steps[k-1]
				s.Deref, s.Index, s.End = true, v, c.end
			} else {
				f.Steps = append(f.Steps, FuncStep{Deref: true, Index: v, Off: op.off, End: c.end})
			}
			f.End = c.end
		default:
			return nil
		}
	}
}

// number parses the number after op (kstrtoul: decimal, 0x hex, 0 octal).
func (p *funcParser) number(op funcTok, what string) (uint64, funcTok, error) {
	n := p.next()
	v, ok := kstrtoull(n.s, 0)
	if !ok || n.s == "" || !isDigit(n.s[0]) {
		return 0, n, p.errf(n.off, n.end, "expected %s after '%s', found %s", what, op.s, quoteTok(n.s)).WithHint("a number is decimal, 0x hexadecimal or 0 octal")
	}
	if v > funcOffsetMax {
		return 0, n, p.errf(n.off, n.end, "%s %s is too big", what[strings.IndexByte(what, ' ')+1:], n.s).WithHint("offsets and indexes are at most %d", funcOffsetMax)
	}
	return v, n, nil
}

// layout places the fields in the record, each aligned to its type's
// size, and counts the slots read.
func (p *funcParser) layout() {
	off := funcHeader
	for i := range p.e.Fields {
		f := &p.e.Fields[i]
		sz := f.Type.Size
		off = (off + sz - 1) / sz * sz
		f.RecOff = off
		off += sz * max(f.Array, 1)
		if f.Slot+1 > p.e.Slots {
			p.e.Slots = f.Slot + 1
		}
	}
}

// typeText is the field's type as the listing writes it.
func (f *FuncField) typeText() string {
	s := f.Type.Name
	if f.Unsigned {
		s = "unsigned " + s
	}
	if f.Array > 0 {
		s += "[" + strconv.Itoa(f.Array) + "]"
	}
	return s
}

// String returns the field as the listing writes it.
func (f *FuncField) String() string {
	var b strings.Builder
	b.WriteString(f.typeText())
	if f.Slot < 0 {
		if !f.DefaultName {
			b.WriteString(" " + f.Name + "=")
		} else {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "0x%x", f.Addr)
		return b.String()
	}
	b.WriteString(" " + f.Name)
	for _, s := range f.Steps {
		if s.Plus != 0 {
			fmt.Fprintf(&b, "+%d", s.Plus)
		}
		if s.Deref {
			fmt.Fprintf(&b, "[%d]", s.Index)
		}
	}
	return b.String()
}

// String returns the event as the prototype's function_events lists it:
// FUNC(FIELD, ...), fields of one argument joined by " | ", the NULLs
// before a field kept (those after the last field dropped), and PATH:
// before a user-space function.
func (e *FuncEvent) String() string {
	var b strings.Builder
	if e.User() {
		b.WriteString(e.Path + ":")
	}
	b.WriteString(e.Func + "(")
	first := true
	for _, f := range e.Fields {
		for k := 0; k < f.Nulls; k++ {
			if !first {
				b.WriteString(", ")
			}
			b.WriteString("NULL")
			first = false
		}
		switch {
		case first:
		case f.Pipe:
			b.WriteString(" | ")
		default:
			b.WriteString(", ")
		}
		first = false
		b.WriteString(f.String())
	}
	b.WriteString(")")
	return b.String()
}
