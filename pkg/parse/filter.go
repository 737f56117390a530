package parse

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the filter language.
const (
	// MaxPredicates is the kernel's limit on predicates in one filter.
	MaxPredicates = 16384
	// MaxFilterString is the longest string constant, in bytes (the
	// kernel's MAX_FILTER_STR_VAL less the NUL).
	MaxFilterString = 255
	// MaxFilterDepth bounds the nesting of parentheses and '!'.
	MaxFilterDepth = 512
	// MaxCPU bounds the CPU numbers of a CPUS{} list (exclusive).
	MaxCPU = 8192
)

// The kernel's words for filter errors (grammar.md §2.4). Every filter
// error starts with one of them, so that a message reads as the kernel's
// does; what follows says what exactly is wrong, and the caret points at
// the token itself, not where the kernel's lands.
const (
	kInvalidOperator  = "Invalid operator"
	kTooManyOpen      = "Too many '('"
	kTooFewOpen       = "Too few '('"
	kMissingQuote     = "Missing matching quote"
	kMissingLBrace    = "Missing '{'"
	kMissingRBrace    = "Missing '}'"
	kOperandTooLong   = "Operand too long"
	kExpectString     = "Expecting string field"
	kExpectNumber     = "Expecting numeric field"
	kIllegalOperation = "Illegal operation for field type"
	kFieldNotFound    = "Field not found"
	kIllegalInteger   = "Illegal integer value"
	kTooManyTerms     = "Too many terms in predicate expression"
	kMeaningless      = "Meaningless filter expression"
	kInvalidCPUList   = "Invalid cpulist"
	kInvalidValue     = "Invalid value (did you forget quotes)?"
	kFunctionNotFound = "Function not found"
	kError            = "Error"
	kNoFilter         = "No filter found"
)

// filterErrorf returns an *Error whose message is the kernel's words,
// then the detail.
func filterErrorf(name, src string, off, end int, words, format string, args ...any) *Error {
	sep := ": "
	if strings.HasSuffix(words, "?") {
		sep = " "
	}
	return Errorf(name, src, off, end, "%s%s%s", words, sep, fmt.Sprintf(format, args...))
}

// ParseFilter parses an event filter expression (grammar.md section 2.1).
// name says what the input is in errors, for example "--filter". Errors
// are *Error and point at the offending token.
func ParseFilter(name, src string) (Expr, error) {
	p := &filterParser{name: name, src: src}
	p.skipSpace()
	if p.pos == len(src) {
		return nil, filterErrorf(name, src, len(src), len(src), kNoFilter, "the filter is empty")
	}
	e, err := p.parseOr(0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(src) {
		return nil, p.unexpected(p.pos)
	}
	return e, nil
}

type filterParser struct {
	name  string
	src   string
	pos   int
	preds int
}

func (p *filterParser) errorf(off, end int, words, format string, args ...any) *Error {
	return filterErrorf(p.name, p.src, off, end, words, format, args...)
}

func (p *filterParser) skipSpace() {
	for p.pos < len(p.src) && isFilterSpace(p.src[p.pos]) {
		p.pos++
	}
}

// logicalAt reports whether the operator tok ("&&" or "||") is at pos.
func (p *filterParser) logicalAt(tok string) bool {
	return strings.HasPrefix(p.src[p.pos:], tok)
}

func (p *filterParser) parseOr(depth int) (Expr, error) {
	return p.parseChain(depth, OpOr)
}

// parseChain parses operands joined by op, left associative. The operands
// of || are && chains; those of && are unary expressions.
func (p *filterParser) parseChain(depth int, op LogicalOp) (Expr, error) {
	operand := func() (Expr, error) {
		if op == OpOr {
			return p.parseChain(depth, OpAnd)
		}
		return p.parseUnary(depth)
	}
	tok := op.String()
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if !p.logicalAt(tok) {
			return left, nil
		}
		opOff := p.pos
		p.pos += len(tok)
		if err := p.needOperand(opOff, opOff+len(tok)); err != nil {
			return nil, err
		}
		right, err := operand()
		if err != nil {
			return nil, err
		}
		left = &Logical{Op: op, L: left, R: right}
	}
}

// needOperand fails when the input ends after the operator at src[off:end].
func (p *filterParser) needOperand(off, end int) error {
	p.skipSpace()
	if p.pos == len(p.src) {
		return p.errorf(off, end, kMeaningless, "%q at the end of the filter has no operand", p.src[off:end])
	}
	return nil
}

func (p *filterParser) parseUnary(depth int) (Expr, error) {
	p.skipSpace()
	off := p.pos
	if depth >= MaxFilterDepth && off < len(p.src) && (p.src[off] == '!' || p.src[off] == '(') {
		return nil, p.errorf(off, off+1, kTooManyOpen, "the filter is nested too deeply (max %d levels of '(' and '!')", MaxFilterDepth)
	}
	switch {
	case p.src[off] == '!' && !strings.HasPrefix(p.src[off:], "!="):
		p.pos++
		if err := p.needOperand(off, off+1); err != nil {
			return nil, err
		}
		x, err := p.parseUnary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &Not{Off: off, X: x}, nil
	case p.src[off] == '(':
		p.pos++
		if err := p.needOperand(off, off+1); err != nil {
			return nil, err
		}
		x, err := p.parseOr(depth + 1)
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos == len(p.src) {
			return nil, p.errorf(off, off+1, kTooManyOpen, "this '(' is never closed").WithHint("add a ')' to close it")
		}
		if p.src[p.pos] != ')' {
			return nil, p.unexpected(p.pos)
		}
		p.pos++
		return x, nil
	}
	return p.parsePred()
}

// unexpected reports the token at off where &&, || or ) (or the end) was
// expected.
func (p *filterParser) unexpected(off int) *Error {
	end := p.tokenEnd(off)
	tok := p.src[off:end]
	e := p.errorf(off, end, kTooManyTerms, "unexpected %q", tok)
	switch tok {
	case ")":
		e = p.errorf(off, end, kTooFewOpen, "this ')' closes nothing")
	case "&":
		e.Hint = `use "&&" to join predicates`
	case "|":
		e.Hint = `use "||" to join predicates`
	default:
		e.Hint = `join predicates with "&&" or "||"`
	}
	return e
}

// tokenEnd returns the end of the token that starts at off, for messages.
func (p *filterParser) tokenEnd(off int) int {
	s := p.src
	if off >= len(s) {
		return off
	}
	end := off
	switch c := s[off]; {
	case isFieldByte(c):
		for end < len(s) && isFieldByte(s[end]) {
			end++
		}
	case strings.IndexByte(opBytes, c) >= 0:
		for end < len(s) && strings.IndexByte(opBytes, s[end]) >= 0 {
			end++
		}
	case c == '"' || c == '\'':
		if i := strings.IndexByte(s[off+1:], c); i >= 0 {
			end = off + i + 2
		} else {
			end = len(s)
		}
	default:
		_, n := utf8.DecodeRuneInString(s[off:])
		end += n
	}
	return end
}

// opBytes are the bytes that comparison and logical operators are made of.
const opBytes = "=!<>~&|"

func (p *filterParser) parsePred() (Expr, error) {
	s := p.src
	off := p.pos
	for p.pos < len(s) && isFieldByte(s[p.pos]) {
		p.pos++
	}
	if p.pos == off {
		end := p.tokenEnd(off)
		return nil, p.errorf(off, end, kFieldNotFound, "expected a field name, found %q", s[off:end])
	}
	pr := &Pred{Field: s[off:p.pos], FieldOff: off}
	p.preds++
	if p.preds > MaxPredicates {
		return nil, p.errorf(off, p.pos, kTooManyTerms, "more than %d predicates", MaxPredicates)
	}
	for p.pos < len(s) && s[p.pos] == '.' {
		modOff := p.pos
		p.pos++
		for p.pos < len(s) && isFieldByte(s[p.pos]) {
			p.pos++
		}
		mod := s[modOff+1 : p.pos]
		if mod != "ustring" && mod != "function" {
			return nil, p.errorf(modOff, p.pos, kInvalidOperator, "unknown field modifier %q", s[modOff:p.pos]).
				WithHint("filters know .ustring and .function")
		}
		if pr.Mod != "" {
			return nil, p.errorf(modOff, p.pos, kInvalidOperator, "modifiers .%s and .%s cannot be combined", pr.Mod, mod)
		}
		pr.Mod = mod
	}
	pr.FieldEnd = p.pos
	if err := p.parseCmpOp(pr); err != nil {
		return nil, err
	}
	v, err := p.parseValue(pr)
	if err != nil {
		return nil, err
	}
	pr.Value = v
	return pr, nil
}

func (p *filterParser) parseCmpOp(pr *Pred) error {
	s := p.src
	fieldText := s[pr.FieldOff:pr.FieldEnd]
	p.skipSpace()
	if p.pos == len(s) {
		return p.errorf(pr.FieldOff, pr.FieldEnd, kInvalidOperator, "missing operator after %q", fieldText).
			WithHint("compare the field with ==, !=, <, <=, >, >=, & or ~")
	}
	off := p.pos
	for p.pos < len(s) && strings.IndexByte(opBytes, s[p.pos]) >= 0 {
		p.pos++
	}
	tok := s[off:p.pos]
	if tok == "" || tok == "&&" || tok == "||" {
		end := p.tokenEnd(off)
		return p.errorf(off, end, kInvalidOperator, "expected an operator after %q, found %q", fieldText, s[off:end]).
			WithHint("compare the field with ==, !=, <, <=, >, >=, & or ~")
	}
	for i, t := range cmpText {
		if t == tok {
			pr.Op, pr.OpOff = CmpOp(i), off
			return nil
		}
	}
	e := p.errorf(off, p.pos, kInvalidOperator, "%q", tok)
	if alt, ok := operatorHints[tok]; ok {
		e.Hint = alt
	} else {
		e.Hint = "operators are ==, !=, <, <=, >, >=, & and ~"
	}
	return e
}

// operatorHints suggest the operator meant by a common mistake.
var operatorHints = map[string]string{
	"=":  `use "==" to compare`,
	"=<": `did you mean "<="?`,
	"=>": `did you mean ">="?`,
	"<>": `use "!=" for "not equal"`,
	"!~": `there is no "!~": negate the pattern instead, field ~ "!pattern"`,
	"=~": `use "~" for a glob match`,
	"~=": `use "~" for a glob match`,
}

func (p *filterParser) parseValue(pr *Pred) (Value, error) {
	s := p.src
	opEnd := pr.OpOff + len(pr.Op.String())
	p.skipSpace()
	off := p.pos
	if off == len(s) {
		return Value{}, p.errorf(pr.OpOff, opEnd, kInvalidValue, "missing value after %q", pr.Op.String())
	}
	c := s[off]
	switch {
	case c == '"' || c == '\'':
		i := strings.IndexByte(s[off+1:], c)
		if i < 0 {
			return Value{}, p.errorf(off, len(s), kMissingQuote, "this %s is never closed", string(c)).
				WithHint("strings are quoted %s...%s and cannot contain their own quote", string(c), string(c))
		}
		p.pos = off + i + 2
		str := s[off+1 : off+1+i]
		if len(str) > MaxFilterString {
			return Value{}, p.errorf(off, p.pos, kOperandTooLong, "the string has %d bytes, max %d", len(str), MaxFilterString)
		}
		if i := strings.IndexByte(str, 0); i >= 0 {
			return Value{}, p.errorf(off+1+i, off+2+i, kError, "the string contains a NUL byte")
		}
		return Value{Kind: ValString, Text: s[off:p.pos], Str: str, Off: off, End: p.pos}, nil
	case c == '-' || isDigit(c):
		p.pos++
		for p.pos < len(s) && (isFieldByte(s[p.pos]) || s[p.pos] == '.') {
			p.pos++
		}
		text := s[off:p.pos]
		v := Value{Kind: ValNumber, Text: text, Off: off, End: p.pos}
		num, err := parseFilterNumber(text)
		if err != nil {
			return Value{}, p.errorf(off, p.pos, kIllegalInteger, "%s", err.msg).WithHint("%s", err.hint)
		}
		v.Neg = text[0] == '-'
		v.Num = num
		return v, nil
	case strings.HasPrefix(s[off:], "CPUS{"):
		rbrace := strings.IndexByte(s[off:], '}')
		if rbrace < 0 {
			return Value{}, p.errorf(off, len(s), kMissingRBrace, "CPUS{ is never closed")
		}
		p.pos = off + rbrace + 1
		list := s[off+len("CPUS{") : off+rbrace]
		if _, err := cpuRanges(list, MaxCPU); err != nil {
			return Value{}, p.errorf(off, p.pos, kInvalidCPUList, "%q: %s", list, err.msg).
				WithHint(`write CPUs as a list such as CPUS{0-3,7}`)
		}
		return Value{Kind: ValCPUs, Text: s[off:p.pos], Str: list, Off: off, End: p.pos}, nil
	case isWordByte(c):
		for p.pos < len(s) && isWordByte(s[p.pos]) {
			p.pos++
		}
		word := s[off:p.pos]
		if word == "CPUS" {
			return Value{}, p.errorf(off, p.pos, kMissingLBrace, "CPUS needs a list in braces").WithHint("write CPUs as CPUS{0-3,7}")
		}
		return Value{Kind: ValWord, Text: word, Str: word, Off: off, End: p.pos}, nil
	}
	end := p.tokenEnd(off)
	return Value{}, p.errorf(off, end, kInvalidValue, "expected a value after %q, found %q", pr.Op.String(), s[off:end]).
		WithHint(`a value is a number, a quoted string or CPUS{list}`)
}

// numberError is why a number token is invalid, before it gets a position.
type numberError struct{ msg, hint string }

// parseFilterNumber converts a number token as the kernel's kstrtoull with
// base 0 does: 0x hex, a leading 0 octal, else decimal. It returns the
// magnitude; a leading '-' is the caller's business.
func parseFilterNumber(text string) (uint64, *numberError) {
	digits := strings.TrimPrefix(text, "-")
	base := uint64(10)
	switch {
	case len(digits) > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'):
		base, digits = 16, digits[2:]
	case len(digits) > 1 && digits[0] == '0':
		base, digits = 8, digits[1:]
	}
	if digits == "" {
		return 0, &numberError{msg: strconv.Quote(text), hint: "numbers are decimal, 0x hex or 0 octal"}
	}
	var n uint64
	for i := 0; i < len(digits); i++ {
		d := digitValue(digits[i])
		if d >= base {
			ne := &numberError{msg: strconv.Quote(text), hint: "numbers are decimal, 0x hex or 0 octal"}
			if base == 8 && d < 10 {
				ne.hint = "a leading 0 makes the number octal; write it without the 0"
			}
			return 0, ne
		}
		hi, lo := bits.Mul64(n, base)
		lo, carry := bits.Add64(lo, d, 0)
		if hi != 0 || carry != 0 {
			return 0, &numberError{msg: strconv.Quote(text) + " does not fit in 64 bits", hint: "numbers must fit in 64 bits"}
		}
		n = lo
	}
	return n, nil
}

func digitValue(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'z':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return uint64(c-'A') + 10
	}
	return 99
}

// CPURange is an inclusive range of CPU numbers of a CPUS{} list.
type CPURange struct{ First, Last int }

func isFilterSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isFieldByte reports whether c may appear in a field name.
func isFieldByte(c byte) bool { return isIdentByte(c) }

// isWordByte reports whether c may appear in an unquoted word value: any
// byte but blanks, quotes, parentheses and operator characters.
func isWordByte(c byte) bool {
	return c > ' ' && c != 0x7f && strings.IndexByte(opBytes+`"'()`, c) < 0
}

// String returns the operator as written: "&&" or "||".
func (o LogicalOp) String() string {
	if o == OpAnd {
		return "&&"
	}
	return "||"
}

// String implements Expr: operands that are || chains inside an && chain,
// and right operands of the same operator, are parenthesised.
func (l *Logical) String() string { return exprString(l) }

// String implements Expr.
func (n *Not) String() string { return exprString(n) }

// String implements Expr.
func (p *Pred) String() string { return exprString(p) }

// exprString writes the whole tree into one buffer, so that long chains
// print in linear time.
func exprString(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Logical:
		// Chains associate left: a right operand of the same operator
		// keeps its parentheses.
		writeOperand(b, e.L, e.Op.prec())
		b.WriteString(" ")
		b.WriteString(e.Op.String())
		b.WriteString(" ")
		writeOperand(b, e.R, e.Op.prec()+1)
	case *Not:
		b.WriteString("!")
		writeOperand(b, e.X, notPrec)
	case *Pred:
		b.WriteString(e.Field)
		if e.Mod != "" {
			b.WriteString(".")
			b.WriteString(e.Mod)
		}
		b.WriteString(" ")
		b.WriteString(e.Op.String())
		b.WriteString(" ")
		b.WriteString(e.Value.String())
	}
}

// notPrec binds tighter than both logical operators.
const notPrec = 3

// prec is the operator's binding strength: && binds tighter than ||.
func (o LogicalOp) prec() int {
	if o == OpAnd {
		return 2
	}
	return 1
}

// writeOperand writes e, in parentheses when it is a chain that binds less
// tightly than minPrec.
func writeOperand(b *strings.Builder, e Expr, minPrec int) {
	if x, ok := e.(*Logical); ok && x.Op.prec() < minPrec {
		b.WriteString("(")
		writeExpr(b, x)
		b.WriteString(")")
		return
	}
	writeExpr(b, e)
}

// String returns the value in canonical form: numbers as written, strings
// in double quotes (single quotes when the string holds a double quote),
// CPUS{list} and words as they are.
func (v Value) String() string {
	switch v.Kind {
	case ValString:
		if strings.Contains(v.Str, `"`) {
			return "'" + v.Str + "'"
		}
		return `"` + v.Str + `"`
	case ValCPUs:
		return "CPUS{" + v.Str + "}"
	case ValWord:
		return v.Str
	}
	return v.Text
}
