package parse

import (
	"strconv"
	"strings"
)

// PrintFmt is a parsed `print fmt:` line of a format file: a quoted C
// format followed by the C expressions of its arguments.
//
// The parser builds the trees that libtraceevent builds (trace-cmd's
// parser), quirks included, because gtrace prints records the way
// trace-cmd does: operators of equal precedence group to the right
// (a - b - c is a - (b - c)); a parenthesised right operand whose
// operator binds less tightly is rotated as if the parentheses were not
// there (a * (b + c) is (a * b) + c); the last arm of ?: is a primary
// (x ? a : b + 1 is (x ? a : b) + 1); an index, a function argument and
// the value side of a ?: arm are primaries too. Anything after the last
// complete argument is ignored, as libtraceevent ignores it.
type PrintFmt struct {
	// Format is the format string with its quotes removed and its escapes
	// as written; adjacent string literals are joined.
	Format string
	// FormatOff and FormatEnd delimit the (first) quoted string in the
	// source.
	FormatOff, FormatEnd int
	// Args are the argument expressions, in order.
	Args []PrintArg
}

// PrintArg is a node of a print fmt argument: *PrintAtom, *PrintField,
// *PrintOp, *PrintCast, *PrintFlags, *PrintSymbolic, *PrintDyn,
// *PrintSizeof or *PrintFunc.
type PrintArg interface {
	// Span returns the byte range of the node in the source.
	Span() (off, end int)
	// String returns fully parenthesised C text. It parses to the same
	// tree, except that libtraceevent reshapes a parenthesised right
	// operand that binds less tightly than its operator (see PrintFmt).
	String() string
	printArg()
}

// PrintAtom is a number, a name (several words such as "unsigned long"
// are one atom, joined by single spaces), a "string" or a 'c' literal.
type PrintAtom struct {
	Text     string // as written, without quotes; escapes are not interpreted
	Quote    byte   // 0, '"' or '\''
	Off, End int
}

// PrintField is REC->name, a field of the record.
type PrintField struct {
	Name     string
	Off, End int
}

// PrintOp is an operator. A prefix operator (- + ! ~) has a nil L. "?"
// has R = a *PrintOp ":" holding both arms; "[" indexes L with R. Both
// operands of a binary operator are normally set; libtraceevent's rotation
// of "a * -b" leaves a nil R in the inner node ((a * ) - b, which
// evaluates as (a * 0) - b).
type PrintOp struct {
	Op           string
	L, R         PrintArg
	OpOff, OpEnd int // the operator token
	Off, End     int
}

// PrintCast is (type)X.
type PrintCast struct {
	Type     string // e.g. "unsigned long", "void *"
	X        PrintArg
	Off, End int
}

// PrintSym is one { value, "string" } pair of __print_flags or
// __print_symbolic. Value is the number as libtraceevent evaluates it at
// parse time: the atom as written, or the decimal result of an
// expression of constants.
type PrintSym struct {
	Value, Str string
}

// PrintFlags is __print_flags(X, "delim", { value, "name" }...).
type PrintFlags struct {
	X        PrintArg
	Delim    string
	Syms     []PrintSym
	Off, End int
}

// PrintSymbolic is __print_symbolic(X, { value, "name" }...).
type PrintSymbolic struct {
	X        PrintArg
	Syms     []PrintSym
	Off, End int
}

// PrintDyn is a helper whose argument is a bare field name: __get_str,
// __get_rel_str, __get_bitmask, __get_rel_bitmask, __get_cpumask,
// __get_rel_cpumask, __get_dynamic_array, __get_rel_dynamic_array,
// __get_sockaddr, __get_sockaddr_rel, __get_dynamic_array_len and
// __get_rel_dynamic_array_len.
type PrintDyn struct {
	Func     string
	Field    string
	Off, End int
}

// PrintSizeof is sizeof(int), sizeof(unsigned), sizeof(unsigned int)
// (Type "int"), sizeof(long), sizeof(unsigned long) (Type "long"),
// sizeof(long long) (Type "long long") or sizeof(REC->field) (Field set).
type PrintSizeof struct {
	Type     string
	Field    string
	Off, End int
}

// PrintFunc is a call of __print_hex(buf, len), __print_hex_str(buf, len),
// __print_array(array, count, size), or of any other function (such as
// the helpers trace-cmd's plugins define, e.g. jiffies_to_msecs(x)).
// Arguments of the three __print helpers are full expressions; those of
// other functions are primaries, as libtraceevent parses them.
// __builtin_expect(cond, v) is not kept: it parses to its condition.
type PrintFunc struct {
	Name     string
	Args     []PrintArg
	Off, End int
}

func (*PrintAtom) printArg()     {}
func (*PrintField) printArg()    {}
func (*PrintOp) printArg()       {}
func (*PrintCast) printArg()     {}
func (*PrintFlags) printArg()    {}
func (*PrintSymbolic) printArg() {}
func (*PrintDyn) printArg()      {}
func (*PrintSizeof) printArg()   {}
func (*PrintFunc) printArg()     {}

// Span implements PrintArg.
func (a *PrintAtom) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintField) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintOp) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintCast) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintFlags) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintSymbolic) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintDyn) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintSizeof) Span() (int, int) { return a.Off, a.End }

// Span implements PrintArg.
func (a *PrintFunc) Span() (int, int) { return a.Off, a.End }

// maxPrintDepth bounds the nesting of print fmt expressions.
const maxPrintDepth = 500

// ParsePrintFmt parses the text after "print fmt: " in a format file.
// name says what the input is in errors (for example "sched:sched_switch").
// Errors are *Error and point into src. A nil error does not promise that
// trace-cmd can print the event: unknown functions and fields are left to
// the caller.
func ParsePrintFmt(name, src string) (*PrintFmt, error) {
	p := &pfParser{name: name, lex: pfLexer{src: src}}
	pf, err := p.parse()
	if err != nil {
		return nil, err
	}
	return pf, nil
}

// pfKind is a token type of libtraceevent's tokenizer.
type pfKind uint8

const (
	pfNone pfKind = iota // end of input, or a byte the tokenizer rejects
	pfSpace
	pfNewline
	pfOp
	pfDelim
	pfItem
	pfDQuote
	pfSQuote
)

var pfKindNames = [...]string{"end of input", "space", "newline", "operator", "delimiter", "name", "string", "character"}

// pfTok is a token. Quoted tokens hold their text without quotes.
type pfTok struct {
	kind     pfKind
	text     string
	off, end int
}

// pfLexer is libtraceevent's tokenizer.
type pfLexer struct {
	src string
	pos int
}

// read returns the next byte as C's signed char would give it, or -1 at
// the end.
func (l *pfLexer) read() int {
	if l.pos >= len(l.src) {
		return -1
	}
	c := int(int8(l.src[l.pos]))
	l.pos++
	return c
}

func (l *pfLexer) peek() int {
	if l.pos >= len(l.src) {
		return -1
	}
	return int(int8(l.src[l.pos]))
}

func cSpace(c int) bool { return c == ' ' || c >= '\t' && c <= '\r' }
func cPrint(c int) bool { return c >= 0x20 && c < 0x7f }

func cAlnum(c int) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func pfType(c int) pfKind {
	switch {
	case c == '\n':
		return pfNewline
	case cSpace(c):
		return pfSpace
	case cAlnum(c) || c == '_':
		return pfItem
	case c == '\'':
		return pfSQuote
	case c == '"':
		return pfDQuote
	case !cPrint(c):
		return pfNone
	case c == '(' || c == ')' || c == ',':
		return pfDelim
	}
	return pfOp
}

// forcedTokens are names that old kernels left unexpanded in mac80211
// formats; libtraceevent replaces them with the strings they stood for.
var forcedTokens = map[string]string{
	"LOCAL_PR_FMT": "%s",
	"STA_PR_FMT":   " sta:%pM",
	"VIF_PR_FMT":   " vif:%p(%d)",
}

// token reads one token, spaces and newlines included.
func (l *pfLexer) token() pfTok {
	start := l.pos
	ch := l.read()
	if ch < 0 {
		return pfTok{kind: pfNone, off: start, end: start}
	}
	kind := pfType(ch)
	if kind == pfNone {
		return pfTok{kind: pfNone, off: start, end: l.pos}
	}
	switch kind {
	case pfNewline, pfDelim:
		return pfTok{kind: kind, text: l.src[start:l.pos], off: start, end: l.pos}
	case pfOp:
		l.opTail(ch)
		return pfTok{kind: kind, text: l.src[start:l.pos], off: start, end: l.pos}
	case pfDQuote, pfSQuote:
		return l.quoted(ch, start)
	}
	for pfType(l.peek()) == kind {
		l.pos++
	}
	t := pfTok{kind: kind, text: l.src[start:l.pos], off: start, end: l.pos}
	if kind == pfItem {
		if s, ok := forcedTokens[t.text]; ok {
			t.kind, t.text = pfDQuote, s
		}
	}
	return t
}

// opTail reads the rest of an operator that starts with ch: "->", doubled
// "++ -- || && >> <<", and a trailing '=' after < > ! = and the doubles
// of < and >.
func (l *pfLexer) opTail(ch int) {
	switch ch {
	case '-':
		if l.peek() == '>' {
			l.pos++
			return
		}
		fallthrough
	case '+', '|', '&', '>', '<':
		if l.peek() != ch {
			break
		}
		l.pos++
		if ch != '>' && ch != '<' {
			return
		}
	case '!', '=':
	default:
		return
	}
	if l.peek() == '=' {
		l.pos++
	}
}

// quoted reads a quoted string as libtraceevent does: a backslash keeps
// the next byte in the string (escapes are not interpreted); the string
// ends at its quote or at a byte that is neither printable nor a newline;
// a double-quoted string is joined with the next one when only spaces
// separate them.
func (l *pfLexer) quoted(quote, start int) pfTok {
	var b []byte
	ch := quote
	for {
		for {
			last := ch
			ch = l.read()
			if ch <= 0 {
				return pfTok{kind: pfNone, off: start, end: l.pos}
			}
			if !(ch != quote && cPrint(ch) || last == '\\' || ch == '\n') {
				break
			}
			b = append(b, byte(ch))
		}
		if quote != '"' {
			break
		}
		save := l.pos
		c := l.read()
		for cSpace(c) {
			c = l.read()
		}
		if c != '"' {
			l.pos = save
			break
		}
		ch = c
	}
	kind := pfDQuote
	if quote == '\'' {
		kind = pfSQuote
	}
	return pfTok{kind: kind, text: string(b), off: start, end: l.pos}
}

// pnKind is the type of a node under construction (libtraceevent's
// print arg types).
type pnKind uint8

const (
	pnNull pnKind = iota
	pnAtom
	pnField
	pnOp
	pnCast
	pnFlags
	pnSymbolic
	pnDyn
	pnSizeof
	pnFunc
)

// pnode is a mutable node: libtraceevent's parser rewrites nodes in
// place, and its tree shapes depend on that.
type pnode struct {
	kind       pnKind
	off, end   int // the node's own tokens
	text       string
	quote      byte
	op         string
	prio       int
	left       *pnode
	right      *pnode
	name       string // field, helper or function name
	field      string // PrintDyn field, PrintSizeof field
	delim      string
	syms       []PrintSym
	args       []*pnode // function args; flags/symbolic: args[0] is the value
	opOff      int
	opEnd      int
	sizeofType string
}

type pfParser struct {
	name  string
	lex   pfLexer
	depth int
}

func (p *pfParser) errorf(off, end int, format string, args ...any) *Error {
	return Errorf(p.name, p.lex.src, off, end, format, args...)
}

// readToken skips spaces (libtraceevent's read_token).
func (p *pfParser) readToken() pfTok {
	for {
		t := p.lex.token()
		if t.kind != pfSpace {
			return t
		}
	}
}

// readItem skips spaces and newlines (read_token_item).
func (p *pfParser) readItem() pfTok {
	for {
		t := p.lex.token()
		if t.kind != pfSpace && t.kind != pfNewline {
			return t
		}
	}
}

func (p *pfParser) unexpected(t pfTok, want string) *Error {
	if t.kind == pfNone {
		if t.off < len(p.lex.src) {
			if c := p.lex.src[t.off]; c == '"' || c == '\'' {
				return p.errorf(t.off, t.end, "unterminated string, want %s", want)
			}
			return p.errorf(t.off, t.end, "unexpected byte %q, want %s", p.lex.src[t.off:t.end], want)
		}
		return p.errorf(t.off, t.end, "unexpected end of input, want %s", want)
	}
	return p.errorf(t.off, t.end, "unexpected %s %q, want %s", pfKindNames[t.kind], t.text, want)
}

func (p *pfParser) expect(t pfTok, kind pfKind, text string) error {
	if t.kind != kind || t.text != text {
		return p.unexpected(t, strconv.Quote(text))
	}
	return nil
}

func (p *pfParser) parse() (*PrintFmt, error) {
	t := p.readItem()
	if t.kind != pfDQuote {
		return nil, p.unexpected(t, "the quoted format")
	}
	pf := &PrintFmt{Format: t.text, FormatOff: t.off, FormatEnd: t.end}
	t = p.readItem()
	for t.kind == pfDQuote {
		pf.Format += t.text
		t = p.readItem()
	}
	if t.kind == pfNone {
		// The end, or a byte the tokenizer rejects: libtraceevent stops
		// there too, with no arguments.
		return pf, nil
	}
	if err := p.expect(t, pfDelim, ","); err != nil {
		return nil, err
	}
	// event_read_print_args: a trailing operator chain is taken whatever
	// follows it; anything else that is not "," ends the list.
	for {
		arg := &pnode{}
		t, err := p.arg(arg)
		if err != nil {
			return nil, err
		}
		pf.Args = append(pf.Args, arg.export())
		if t.kind == pfOp {
			if t, err = p.op(arg, t); err != nil {
				return nil, err
			}
			pf.Args[len(pf.Args)-1] = arg.export()
			for t.kind == pfNewline {
				t = p.readItem()
			}
			if t.kind == pfNone {
				break
			}
			continue
		}
		if t.kind == pfDelim && t.text == "," {
			continue
		}
		break
	}
	return pf, nil
}

// arg is process_arg: read a token and parse a primary (a prefix
// operator takes the whole chain that follows its operand).
func (p *pfParser) arg(n *pnode) (pfTok, error) {
	return p.argToken(n, p.readToken())
}

func (p *pfParser) enter(t pfTok) error {
	p.depth++
	if p.depth > maxPrintDepth {
		return p.errorf(t.off, t.end, "expression nested too deeply")
	}
	return nil
}

// argToken is process_arg_token.
func (p *pfParser) argToken(n *pnode, t pfTok) (pfTok, error) {
	if err := p.enter(t); err != nil {
		return t, err
	}
	defer func() { p.depth-- }()
	switch t.kind {
	case pfItem:
		if t.text == "REC" {
			return p.entry(n, t)
		}
		atom := t.text
		next := p.readItem()
		if next.kind == pfDelim && next.text == "(" {
			return p.function(n, t)
		}
		end := t.end
		for next.kind == pfItem {
			atom += " " + next.text
			end = next.end
			next = p.readItem()
		}
		*n = pnode{kind: pnAtom, text: atom, off: t.off, end: end}
		return next, nil
	case pfDQuote, pfSQuote:
		q := byte('"')
		if t.kind == pfSQuote {
			q = '\''
		}
		*n = pnode{kind: pnAtom, text: t.text, quote: q, off: t.off, end: t.end}
		return p.readItem(), nil
	case pfDelim:
		if t.text == "(" {
			return p.paren(n, t)
		}
		*n = pnode{kind: pnOp, op: t.text, off: t.off, end: t.end, opOff: t.off, opEnd: t.end}
		return p.op(n, t)
	case pfOp:
		*n = pnode{kind: pnOp, op: t.text, off: t.off, end: t.end, opOff: t.off, opEnd: t.end}
		return p.op(n, t)
	}
	return t, p.unexpected(t, "an expression")
}

// opPrio is libtraceevent's get_op_prio: smaller binds tighter; -1 for
// tokens that are not binary or prefix operators.
func opPrio(op string) int {
	switch op {
	case "~", "!":
		return 4
	case "*", "/", "%":
		return 6
	case "+", "-":
		return 7
	case "<<", ">>":
		return 8
	case "<", ">", "<=", ">=":
		return 9
	case "==", "!=":
		return 10
	case "&":
		return 11
	case "^":
		return 12
	case "|":
		return 13
	case "&&":
		return 14
	case "||":
		return 15
	case "?":
		return 16
	case "++", "--":
		return 3
	}
	return -1
}

func isBinaryOp(op string) bool {
	switch op {
	case ">>", "<<", "&", "|", "&&", "||", "-", "+", "*", "^", "/", "%", "<", ">", "<=", ">=", "==", "!=":
		return true
	}
	return false
}

// op is process_op: t is an operator token that follows the node n (or,
// for a prefix operator, that n holds with no left operand).
func (p *pfParser) op(n *pnode, t pfTok) (pfTok, error) {
	if err := p.enter(t); err != nil {
		return t, err
	}
	defer func() { p.depth-- }()
	var right *pnode
	var next pfTok
	var err error
	switch {
	case n.kind == pnOp && n.left == nil:
		switch t.text {
		case "~", "!", "+", "-":
		default:
			return t, p.errorf(t.off, t.end, "bad prefix operator %q", t.text)
		}
		n.left = &pnode{kind: pnNull}
		right = &pnode{}
		n.right = right
		if next, err = p.arg(right); err != nil {
			return next, err
		}
	case t.text == "?":
		left := *n
		*n = pnode{kind: pnOp, op: "?", left: &left, opOff: t.off, opEnd: t.end, off: t.off, end: t.end}
		if next, err = p.cond(n); err != nil {
			return next, err
		}
	case isBinaryOp(t.text):
		left := *n
		*n = pnode{kind: pnOp, op: t.text, left: &left, opOff: t.off, opEnd: t.end, off: t.off, end: t.end}
		if left.kind != pnNull {
			n.prio = opPrio(t.text)
		}
		next = p.readItem()
		// "(char *)": a '*' right before ')' ends a pointer type.
		if t.text == "*" && next.kind == pfDelim && next.text == ")" {
			if left.kind != pnAtom {
				return next, p.errorf(t.off, t.end, "'*' before ')' needs a type name before it")
			}
			left.text += " *"
			left.end = t.end
			*n = left
			return next, nil
		}
		right = &pnode{}
		if next, err = p.argToken(right, next); err != nil {
			return next, err
		}
		if right.kind == pnOp && opPrio(n.op) < opPrio(right.op) {
			// libtraceevent rotates on priority alone, parentheses or not.
			n.right = right.left
			*n, *right = *right, *n
			n.left = right
		} else {
			n.right = right
		}
	case t.text == "[":
		left := *n
		*n = pnode{kind: pnOp, op: "[", left: &left, opOff: t.off, opEnd: t.end, off: t.off, end: t.end}
		idx := &pnode{}
		tt, err := p.arg(idx)
		if err != nil {
			return tt, err
		}
		if err := p.expect(tt, pfOp, "]"); err != nil {
			return tt, err
		}
		n.right = idx
		n.end = tt.end
		next = p.readItem()
	default:
		return t, p.errorf(t.off, t.end, "unknown operator %q", t.text)
	}
	if next.kind == pfOp && next.text != ":" {
		if opPrio(next.text) > n.prio {
			return p.op(n, next)
		}
		if right == nil {
			return next, p.errorf(next.off, next.end, "unknown operator %q", next.text)
		}
		return p.op(right, next)
	}
	return next, nil
}

// cond is process_cond: the arms of ?: after the '?'.
func (p *pfParser) cond(top *pnode) (pfTok, error) {
	left := &pnode{}
	t, err := p.arg(left)
	for err == nil && t.kind == pfOp && t.text != ":" {
		t, err = p.op(left, t)
	}
	if err != nil {
		return t, err
	}
	if err := p.expect(t, pfOp, ":"); err != nil {
		return t, err
	}
	colon := &pnode{kind: pnOp, op: ":", left: left, opOff: t.off, opEnd: t.end, off: t.off, end: t.end}
	right := &pnode{}
	colon.right = right
	t, err = p.arg(right)
	if err != nil {
		return t, err
	}
	top.right = colon
	return t, nil
}

// entry is process_entry: "REC" was read; "->name" follows. "(REC)->name"
// comes back here from paren.
func (p *pfParser) entry(n *pnode, rec pfTok) (pfTok, error) {
	t := p.readItem()
	if t.kind == pfDelim && t.text == ")" {
		// "(REC)": tell paren to come back for the "->".
		*n = pnode{kind: pnNull, off: rec.off, end: rec.end}
		return pfTok{kind: pfItem, text: ")", off: t.off, end: t.end}, nil
	}
	if err := p.expect(t, pfOp, "->"); err != nil {
		return t, err
	}
	name := p.readToken()
	if name.kind != pfItem {
		return name, p.unexpected(name, "a field name")
	}
	*n = pnode{kind: pnField, name: name.text, off: rec.off, end: name.end}
	return p.readToken(), nil
}

// paren is process_paren: a parenthesised expression, or a cast when a
// name, a string or '(' follows the ')'.
func (p *pfParser) paren(n *pnode, open pfTok) (pfTok, error) {
	t, err := p.arg(n)
	if err == nil && t.kind == pfOp {
		t, err = p.op(n, t)
	}
	if err != nil {
		return t, err
	}
	if t.kind == pfItem && t.text == ")" {
		return p.entry(n, pfTok{off: open.off, end: t.end})
	}
	if err := p.expect(t, pfDelim, ")"); err != nil {
		return t, err
	}
	closeEnd := t.end
	t = p.readItem()
	if t.kind == pfItem || t.kind == pfDQuote || t.kind == pfSQuote || (t.kind == pfDelim && t.text == "(") {
		if n.kind != pnAtom {
			return t, p.errorf(open.off, closeEnd, "a cast needs a type name in the parentheses")
		}
		item := &pnode{}
		*n = pnode{kind: pnCast, text: n.text, left: item, off: open.off, end: closeEnd}
		return p.argToken(item, t)
	}
	return t, nil
}

// function handles NAME( ... ); name is the NAME token and "(" was read.
func (p *pfParser) function(n *pnode, name pfTok) (pfTok, error) {
	switch name.text {
	case "__print_flags", "__print_symbolic":
		return p.flags(n, name)
	case "__print_hex", "__print_hex_str":
		return p.helper(n, name, 2)
	case "__print_array":
		return p.helper(n, name, 3)
	case "__get_str", "__get_rel_str", "__get_bitmask", "__get_rel_bitmask",
		"__get_cpumask", "__get_rel_cpumask", "__get_dynamic_array_len",
		"__get_rel_dynamic_array_len", "__get_dynamic_array",
		"__get_rel_dynamic_array", "__get_sockaddr", "__get_sockaddr_rel":
		return p.dyn(n, name)
	case "__builtin_expect":
		return p.builtinExpect(n, name)
	case "sizeof":
		return p.sizeof(n, name)
	}
	*n = pnode{kind: pnFunc, name: name.text, off: name.off, end: name.end}
	t := p.readToken()
	if t.kind == pfDelim && t.text == ")" {
		n.end = t.end
		return p.readToken(), nil
	}
	for {
		a := &pnode{}
		var err error
		t, err = p.argToken(a, t)
		if err != nil {
			return t, err
		}
		n.args = append(n.args, a)
		if t.kind == pfDelim && t.text == ")" {
			n.end = t.end
			return p.readToken(), nil
		}
		if err := p.expect(t, pfDelim, ","); err != nil {
			return t, err
		}
		t = p.readToken()
	}
}

// helper parses the arguments of __print_hex and friends: full
// expressions, comma separated (alloc_and_process_delim).
func (p *pfParser) helper(n *pnode, name pfTok, nargs int) (pfTok, error) {
	*n = pnode{kind: pnFunc, name: name.text, off: name.off, end: name.end}
	for i := 0; i < nargs; i++ {
		a := &pnode{}
		t, err := p.arg(a)
		if err == nil && t.kind == pfOp {
			t, err = p.op(a, t)
		}
		if err != nil {
			return t, err
		}
		want := ","
		if i == nargs-1 {
			want = ")"
		}
		if err := p.expect(t, pfDelim, want); err != nil {
			return t, err
		}
		n.args = append(n.args, a)
		n.end = t.end
	}
	return p.readItem(), nil
}

// dyn parses NAME(field) of the __get_* helpers. An index after
// __get_dynamic_array(field) is parsed as the '[' operator.
func (p *pfParser) dyn(n *pnode, name pfTok) (pfTok, error) {
	f := p.readToken()
	if f.kind != pfItem {
		return f, p.unexpected(f, "a field name")
	}
	t := p.readToken()
	if err := p.expect(t, pfDelim, ")"); err != nil {
		return t, err
	}
	*n = pnode{kind: pnDyn, name: name.text, field: f.text, off: name.off, end: t.end}
	switch name.text {
	case "__get_dynamic_array", "__get_rel_dynamic_array", "__get_sockaddr", "__get_sockaddr_rel":
		return p.readItem(), nil
	}
	return p.readToken(), nil
}

// builtinExpect parses __builtin_expect(cond, value) into cond.
func (p *pfParser) builtinExpect(n *pnode, name pfTok) (pfTok, error) {
	t, err := p.arg(n)
	if err != nil {
		return t, err
	}
	if err := p.expect(t, pfDelim, ","); err != nil {
		return t, err
	}
	if t = p.readToken(); t.kind != pfItem {
		return t, p.unexpected(t, "a constant")
	}
	if t = p.readToken(); t.kind != pfDelim || t.text != ")" {
		return t, p.unexpected(t, `")"`)
	}
	return p.readItem(), nil
}

// sizeof parses sizeof(int), sizeof(unsigned [int|long]), sizeof(long
// [long]) and sizeof(REC->field), the forms libtraceevent knows.
func (p *pfParser) sizeof(n *pnode, name pfTok) (pfTok, error) {
	*n = pnode{kind: pnSizeof, off: name.off, end: name.end}
	t := p.readItem()
	next := false // t already holds the token after the type
	if t.kind == pfItem && t.text == "unsigned" {
		t = p.readItem()
		if t.kind != pfItem {
			n.sizeofType = "int"
			next = true
		}
	}
	switch {
	case next:
	case t.kind == pfItem && t.text == "int":
		n.sizeofType = "int"
	case t.kind == pfItem && t.text == "long":
		t = p.readItem()
		if t.kind == pfItem && t.text == "long" {
			n.sizeofType = "long long"
		} else {
			n.sizeofType = "long"
			next = true
		}
	case t.kind == pfItem && t.text == "REC":
		arrow := p.readItem()
		if err := p.expect(arrow, pfOp, "->"); err != nil {
			return arrow, err
		}
		f := p.readToken()
		if f.kind != pfItem {
			return f, p.unexpected(f, "a field name")
		}
		n.field = f.text
	default:
		return t, p.unexpected(t, "int, unsigned, long or REC->field")
	}
	if !next {
		t = p.readItem()
	}
	if err := p.expect(t, pfDelim, ")"); err != nil {
		return t, err
	}
	n.end = t.end
	return p.readItem(), nil
}

// flags parses the rest of __print_flags(value, delim, {v, "s"}...) and
// __print_symbolic(value, {v, "s"}...).
func (p *pfParser) flags(n *pnode, name pfTok) (pfTok, error) {
	kind := pnSymbolic
	if name.text == "__print_flags" {
		kind = pnFlags
	}
	val := &pnode{}
	t, err := p.arg(val)
	for err == nil && t.kind == pfOp {
		t, err = p.op(val, t)
	}
	if err != nil {
		return t, err
	}
	if err := p.expect(t, pfDelim, ","); err != nil {
		return t, err
	}
	*n = pnode{kind: kind, name: name.text, args: []*pnode{val}, off: name.off, end: t.end}
	if kind == pnFlags {
		t = p.readItem()
		if t.kind == pfItem || t.kind == pfDQuote || t.kind == pfSQuote {
			n.delim = t.text
			t = p.readItem()
		}
		if err := p.expect(t, pfDelim, ","); err != nil {
			return t, err
		}
	}
	syms, t, err := p.syms()
	if err != nil {
		return t, err
	}
	n.syms = syms
	if err := p.expect(t, pfDelim, ")"); err != nil {
		return t, err
	}
	n.end = t.end
	return p.readItem(), nil
}

// syms parses "{ value, str }, ..." (process_fields); it returns the
// token after the list.
func (p *pfParser) syms() ([]PrintSym, pfTok, error) {
	var syms []PrintSym
	for {
		t := p.readItem()
		if t.kind != pfOp || t.text != "{" {
			return syms, t, nil
		}
		v := &pnode{}
		t, err := p.arg(v)
		if err == nil && t.kind == pfOp {
			t, err = p.op(v, t)
		}
		if err != nil {
			return nil, t, err
		}
		if err := p.expect(t, pfDelim, ","); err != nil {
			return nil, t, err
		}
		value, ok := v.eval()
		if !ok {
			return nil, t, p.errorf(v.off, v.end, "a flag or symbol value must be a constant")
		}
		s := &pnode{}
		if t, err = p.arg(s); err != nil {
			return nil, t, err
		}
		if err := p.expect(t, pfOp, "}"); err != nil {
			return nil, t, err
		}
		str, ok := s.eval()
		if !ok {
			return nil, t, p.errorf(s.off, s.end, "a flag or symbol name must be a string")
		}
		syms = append(syms, PrintSym{Value: value, Str: str})
		t = p.readItem()
		if t.kind != pfDelim || t.text != "," {
			return syms, t, nil
		}
	}
}

// eval is libtraceevent's arg_eval: an atom's text, or the decimal value
// of a constant expression.
func (n *pnode) eval() (string, bool) {
	switch n.kind {
	case pnAtom:
		return n.text, true
	case pnCast:
		return n.left.eval()
	case pnOp:
		v, ok := n.num()
		if !ok {
			return "", false
		}
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

// num is arg_num_eval over constants: the operators it knows are | & <
// > <= >= << >> == != + - ~ (and ||, &&).
func (n *pnode) num() (int64, bool) {
	switch n.kind {
	case pnAtom:
		return CStrtoll(n.text), true
	case pnCast:
		v, ok := n.left.num()
		if !ok {
			return 0, false
		}
		return int64(CastValue(uint64(v), n.text)), true
	case pnOp:
	default:
		return 0, false
	}
	if n.op == "~" {
		r, ok := n.right.num()
		return ^r, ok
	}
	var l int64
	if !((n.op == "-" || n.op == "+") && n.left.kind == pnNull) {
		var ok bool
		if l, ok = n.left.num(); !ok {
			return 0, false
		}
	}
	r, ok := n.right.num()
	if !ok {
		return 0, false
	}
	b := func(v bool) int64 {
		if v {
			return 1
		}
		return 0
	}
	switch n.op {
	case "|":
		return l | r, true
	case "||":
		return b(l != 0 || r != 0), true
	case "&":
		return l & r, true
	case "&&":
		return b(l != 0 && r != 0), true
	case "<":
		return b(l < r), true
	case "<<":
		return l << (uint64(r) & 63), true
	case "<=":
		return b(l <= r), true
	case ">":
		return b(l > r), true
	case ">>":
		return l >> (uint64(r) & 63), true
	case ">=":
		return b(l >= r), true
	case "==":
		return b(l == r), true
	case "!=":
		return b(l != r), true
	case "-":
		return l - r, true
	case "+":
		return l + r, true
	}
	return 0, false
}

// export converts a finished node into the AST.
func (n *pnode) export() PrintArg {
	if n == nil || n.kind == pnNull {
		return nil
	}
	switch n.kind {
	case pnAtom:
		return &PrintAtom{Text: n.text, Quote: n.quote, Off: n.off, End: n.end}
	case pnField:
		return &PrintField{Name: n.name, Off: n.off, End: n.end}
	case pnOp:
		o := &PrintOp{Op: n.op, L: n.left.export(), R: n.right.export(), OpOff: n.opOff, OpEnd: n.opEnd}
		o.Off, o.End = spanOf(n.opOff, n.end, o.L, o.R)
		return o
	case pnCast:
		c := &PrintCast{Type: n.text, X: n.left.export()}
		c.Off, c.End = spanOf(n.off, n.end, c.X)
		return c
	case pnFlags:
		return &PrintFlags{X: n.args[0].export(), Delim: n.delim, Syms: n.syms, Off: n.off, End: n.end}
	case pnSymbolic:
		return &PrintSymbolic{X: n.args[0].export(), Syms: n.syms, Off: n.off, End: n.end}
	case pnDyn:
		return &PrintDyn{Func: n.name, Field: n.field, Off: n.off, End: n.end}
	case pnSizeof:
		return &PrintSizeof{Type: n.sizeofType, Field: n.field, Off: n.off, End: n.end}
	}
	f := &PrintFunc{Name: n.name, Off: n.off, End: n.end}
	for _, a := range n.args {
		f.Args = append(f.Args, a.export())
	}
	return f
}

// spanOf widens [off, end) to cover the nodes.
func spanOf(off, end int, nodes ...PrintArg) (int, int) {
	for _, x := range nodes {
		if x == nil {
			continue
		}
		o, e := x.Span()
		off, end = min(off, o), max(end, e)
	}
	return off, end
}

// CStrtoll is C's strtoll(s, NULL, 0): an optional sign, then a decimal,
// 0x hex or 0 octal number; it stops at the first byte that does not fit
// and saturates on overflow. Text that is not a number gives 0.
func CStrtoll(s string) int64 {
	neg, u, over := cStrto(s)
	if neg {
		if over || u > 1<<63 {
			return -1 << 63
		}
		return -int64(u)
	}
	if over || u > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(u)
}

// CStrtoull is C's strtoull(s, NULL, 0): like CStrtoll, but a '-' negates
// the unsigned value and overflow gives all ones.
func CStrtoull(s string) uint64 {
	neg, u, over := cStrto(s)
	if over {
		return ^uint64(0)
	}
	if neg {
		return -u
	}
	return u
}

func cStrto(s string) (neg bool, u uint64, over bool) {
	i := 0
	for i < len(s) && cSpace(int(s[i])) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	base := uint64(10)
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && i+2 < len(s) && hexDigit(s[i+2]) < 16 {
		base, i = 16, i+2
	} else if i < len(s) && s[i] == '0' {
		base = 8
	}
	for ; i < len(s); i++ {
		d := hexDigit(s[i])
		if d >= base {
			break
		}
		if u > (^uint64(0)-d)/base {
			over = true
		}
		u = u*base + d
	}
	return neg, u, over
}

func hexDigit(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 16
}

// CastValue applies a cast to a value as libtraceevent does (eval_type):
// u8 u16 u32 s8 s16 s32, char, short and int (signed or not) keep that
// many low bits, zero extended; pointers, structs, 64-bit and long types
// and unknown names keep the value.
func CastValue(v uint64, typ string) uint64 {
	if len(typ) < 2 || typ[len(typ)-1] == '*' || strings.HasPrefix(typ, "struct") {
		return v
	}
	switch typ {
	case "u8", "s8":
		return v & 0xff
	case "u16", "s16":
		return v & 0xffff
	case "u32", "s32":
		return v & 0xffffffff
	}
	switch strings.TrimPrefix(typ, "unsigned ") {
	case "char":
		return v & 0xff
	case "short":
		return v & 0xffff
	case "int":
		return v & 0xffffffff
	}
	return v
}
