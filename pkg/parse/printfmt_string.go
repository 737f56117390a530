package parse

import (
	"strconv"
	"strings"
)

// String returns the print fmt as C text: the format, then the
// arguments. It parses to the same trees.
func (pf *PrintFmt) String() string {
	var b strings.Builder
	b.WriteString(`"` + pf.Format + `"`)
	for _, a := range pf.Args {
		b.WriteString(", ")
		b.WriteString(argString(a))
	}
	return b.String()
}

// argString is String for nodes that may be nil (libtraceevent's empty
// operand prints as nothing).
func argString(a PrintArg) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// String implements PrintArg. A name ending in " *" (a pointer type that
// is not a cast) keeps the parentheses it needs.
func (a *PrintAtom) String() string {
	switch a.Quote {
	case '"', '\'':
		return quoteRaw(a.Text)
	}
	// Rebuild "(char *)" or "((char *) *)".
	s := a.Text
	n := 0
	for strings.HasSuffix(s, " *") {
		s = strings.TrimSuffix(s, " *")
		n++
	}
	for i := 0; i < n; i++ {
		s = "(" + s + " *)"
	}
	return s
}

// String implements PrintArg.
func (a *PrintField) String() string { return "REC->" + a.Name }

// String implements PrintArg.
func (a *PrintOp) String() string {
	switch a.Op {
	case "?":
		var t, f PrintArg
		if c, ok := a.R.(*PrintOp); ok && c.Op == ":" {
			t, f = c.L, c.R
		}
		return "(" + argString(a.L) + " ? " + argString(t) + " : " + argString(f) + ")"
	case "[":
		return "(" + argString(a.L) + "[" + argString(a.R) + "])"
	}
	if a.L == nil {
		return "(" + a.prefixChain() + ")"
	}
	return "(" + argString(a.L) + " " + a.Op + " " + argString(a.R) + ")"
}

// prefixChain prints a prefix operator and its operand, a chain of prefix
// operators without parentheses between them ("! ! x", as it was
// written): parenthesised one by one, a chain that parsed would nest too
// deeply to parse again.
func (a *PrintOp) prefixChain() string {
	if r, ok := a.R.(*PrintOp); ok && r.L == nil && r.Op != "?" && r.Op != "[" {
		return a.Op + " " + r.prefixChain()
	}
	return a.Op + " " + argString(a.R)
}

// String implements PrintArg.
func (a *PrintCast) String() string {
	typ := quoteRaw(a.Type)
	if bareType(a.Type) {
		// The cast's own parentheses end the last " *".
		typ = strings.TrimSuffix(a.Type, " *")
		if typ != a.Type {
			typ = (&PrintAtom{Text: typ}).String() + " *"
		}
	}
	return "(" + typ + ")" + argString(a.X)
}

// bareType reports whether a cast's type reads back as itself without
// quotes: names, optionally followed by " *"s.
func bareType(t string) bool {
	for strings.HasSuffix(t, " *") {
		t = strings.TrimSuffix(t, " *")
	}
	return bareValue(t) && t[0] != '-'
}

// String implements PrintArg.
func (a *PrintFlags) String() string {
	return "__print_flags(" + argString(a.X) + ", " + quoteRaw(a.Delim) + ", " + symsString(a.Syms) + ")"
}

// String implements PrintArg.
func (a *PrintSymbolic) String() string {
	return "__print_symbolic(" + argString(a.X) + ", " + symsString(a.Syms) + ")"
}

// String implements PrintArg.
func (a *PrintDyn) String() string { return a.Func + "(" + a.Field + ")" }

// String implements PrintArg.
func (a *PrintSizeof) String() string {
	if a.Field != "" {
		return "sizeof(REC->" + a.Field + ")"
	}
	return "sizeof(" + a.Type + ")"
}

// String implements PrintArg.
func (a *PrintFunc) String() string {
	var b strings.Builder
	b.WriteString(a.Name)
	b.WriteString("(")
	for i, x := range a.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(argString(x))
	}
	b.WriteString(")")
	return b.String()
}

func symsString(syms []PrintSym) string {
	var b strings.Builder
	for i, s := range syms {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{ ")
		if bareValue(s.Value) {
			b.WriteString(s.Value)
		} else {
			b.WriteString(quoteRaw(s.Value))
		}
		b.WriteString(", ")
		b.WriteString(quoteRaw(s.Str))
		b.WriteString(" }")
	}
	return b.String()
}

// bareValue reports whether a flag value reads back as itself when
// written without quotes: names and numbers, or a negative decimal.
func bareValue(v string) bool {
	if v == "" {
		return false
	}
	if v[0] == '-' {
		// The minus applies to a number that must fit in an int64.
		_, err := strconv.ParseInt(v[1:], 10, 64)
		return err == nil && v[1] >= '0' && v[1] <= '9'
	}
	for _, w := range strings.Split(v, " ") {
		if w == "" {
			return false
		}
		for i := 0; i < len(w); i++ {
			if !isIdentByte(w[i]) {
				return false
			}
		}
	}
	return true
}

// quoteRaw quotes text whose escapes are as written: in double quotes,
// or in single quotes when it holds a double quote that no backslash
// precedes (libtraceevent's tokenizer ends a string at such a quote).
func quoteRaw(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '"' && (i == 0 || s[i-1] != '\\') {
			return "'" + s + "'"
		}
	}
	return `"` + s + `"`
}
