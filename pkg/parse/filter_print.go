package parse

import (
	"strconv"
	"strings"
)

// String returns the filter in normal form, as it applies to its event:
// one blank around each operator, && chains inside || chains without
// parentheses and || chains inside && chains or after ! in them, numbers
// in decimal as the field compares them (010 is 8, 0xffffffff on an int
// is -1), strings in double quotes (single when they hold a double
// quote), CPU lists as CPUS{a-b,c}, function names bare and .function addresses
// in hex.
// Parsed and bound to the same format again, it gives the same filter.
func (bf *BoundFilter) String() string {
	var b strings.Builder
	writeBound(&b, bf.Root)
	return b.String()
}

// writeBound writes a bound node.
func writeBound(b *strings.Builder, e BoundExpr) {
	switch e := e.(type) {
	case *BoundLogical:
		for i, x := range e.X {
			if i > 0 {
				b.WriteString(" ")
				b.WriteString(e.Op.String())
				b.WriteString(" ")
			}
			writeBoundOperand(b, x, e.Op.prec()+1)
		}
	case *BoundNot:
		b.WriteString("!")
		writeBoundOperand(b, e.X, notPrec)
	case *BoundPred:
		writeBoundPred(b, e)
	}
}

// writeBoundOperand writes e, in parentheses when it is a chain that
// binds less tightly than minPrec.
func writeBoundOperand(b *strings.Builder, e BoundExpr, minPrec int) {
	if x, ok := e.(*BoundLogical); ok && x.Op.prec() < minPrec {
		b.WriteString("(")
		writeBound(b, x)
		b.WriteString(")")
		return
	}
	writeBound(b, e)
}

// writeBoundPred writes a predicate: the field as written, its modifier,
// the operator and the value in normal form.
func writeBoundPred(b *strings.Builder, p *BoundPred) {
	b.WriteString(p.Pred.Field)
	if p.Pred.Mod != "" {
		b.WriteString(".")
		b.WriteString(p.Pred.Mod)
	}
	b.WriteString(" ")
	b.WriteString(p.Pred.Op.String())
	b.WriteString(" ")
	switch p.Compare {
	case CompareNumber:
		if p.Signed {
			b.WriteString(strconv.FormatInt(int64(p.Val), 10))
		} else {
			b.WriteString(strconv.FormatUint(p.Val, 10))
		}
	case CompareString:
		b.WriteString(quoteFilterString(p.Pred.Value.Str))
	case CompareCPUs, CompareCPUMask:
		b.WriteString("CPUS{")
		for i, r := range p.CPUs {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Itoa(r.First))
			if r.Last != r.First {
				b.WriteString("-")
				b.WriteString(strconv.Itoa(r.Last))
			}
		}
		b.WriteString("}")
	case CompareFunction:
		switch {
		case isIdent(p.Func):
			b.WriteString(p.Func)
		case p.Func != "":
			b.WriteString(quoteFilterString(p.Func))
		default:
			b.WriteString("0x")
			b.WriteString(strconv.FormatUint(p.Addr, 16))
		}
	}
}

// isIdent reports whether s is a C identifier, which a filter takes
// unquoted as a function's name.
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || !isDigit(c)) {
			return false
		}
	}
	return s != ""
}

// quoteFilterString quotes s for a filter: in double quotes, or single
// ones when s holds a double quote.
func quoteFilterString(s string) string {
	if strings.Contains(s, `"`) {
		return "'" + s + "'"
	}
	return `"` + s + `"`
}
