package filtergen

import (
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Features returns the names of what the bound filter bf exercises, for
// example "number ==", "glob [a-z]", "literal octal", "pseudo cpu",
// "logic ||", "parentheses". Each name appears once.
func Features(bf *parse.BoundFilter) []string {
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	logic(bf.Root, add)
	if hasParen(bf.Src) {
		add("parentheses")
	}
	parse.WalkPreds(bf.Root, func(p *parse.BoundPred) { predFeatures(p, add) })
	return out
}

func logic(e parse.BoundExpr, add func(string)) {
	switch e := e.(type) {
	case *parse.BoundLogical:
		add("logic " + e.Op.String())
		for _, x := range e.X {
			logic(x, add)
		}
	case *parse.BoundNot:
		add("logic !")
		logic(e.X, add)
	}
}

// hasParen reports whether src has a '(' outside its quoted strings.
func hasParen(src string) bool {
	var q byte
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '(':
			return true
		}
	}
	return false
}

// AllFeatures lists every name Features can return that a generator
// with pseudo-fields, on events with strings of each class, signed and
// unsigned numbers and cpumasks, must produce over a long enough run.
var AllFeatures = []string{
	"logic &&", "logic ||", "logic !", "parentheses",
	"number ==", "number !=", "number <", "number <=", "number >", "number >=", "number &",
	"signed negative", "literal decimal", "literal hex", "literal octal",
	"string ==", "string !=", "string ~",
	"string char[]", "string __data_loc",
	"quote double", "quote single", "quote bare",
	"glob exact", "glob prefix", "glob suffix", "glob substr", "glob middle *", "glob several *",
	"glob ?", "glob [abc]", "glob [a-z]", "glob [!x]", "glob negated",
	"cpus &", "cpus ==", "cpus !=", "cpumask &", "cpumask ==", "cpumask !=",
	"pseudo cpu", "pseudo comm",
}

func predFeatures(p *parse.BoundPred, add func(string)) {
	v := p.Pred.Value
	switch p.Operand {
	case parse.OperandCPU:
		add("pseudo cpu")
	case parse.OperandComm:
		add("pseudo comm")
	}
	switch p.Compare {
	case parse.CompareNumber:
		add("number " + p.Op.String())
		digits := strings.TrimPrefix(v.Text, "-")
		switch {
		case strings.HasPrefix(digits, "0x") || strings.HasPrefix(digits, "0X"):
			add("literal hex")
		case len(digits) > 1 && digits[0] == '0':
			add("literal octal")
		default:
			add("literal decimal")
		}
		if v.Neg {
			add("signed negative")
		}
	case parse.CompareCPUs:
		add("cpus " + p.Op.String())
	case parse.CompareCPUMask:
		add("cpumask " + p.Op.String())
	case parse.CompareString:
		add("string " + p.Pred.Op.String())
		if f := p.Field; f != nil {
			switch f.Class {
			case parse.ClassString:
				add("string char[]")
			case parse.ClassDataLoc, parse.ClassRelLoc:
				add("string __data_loc")
			}
		}
		switch {
		case v.Kind == parse.ValWord:
			add("quote bare")
		case strings.HasPrefix(v.Text, "'"):
			add("quote single")
		default:
			add("quote double")
		}
		if p.Pred.Op == parse.CmpGlob {
			globFeatures(p.Glob, v.Str, add)
		}
	}
}

func globFeatures(g parse.Glob, pat string, add func(string)) {
	if strings.HasPrefix(pat, "!") {
		add("glob negated")
	}
	switch g.Kind {
	case parse.GlobExact:
		add("glob exact")
		return
	case parse.GlobPrefix:
		add("glob prefix")
		return
	case parse.GlobSuffix:
		add("glob suffix")
		return
	case parse.GlobSubstr:
		add("glob substr")
		return
	}
	t := g.Text
	stars := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '*':
			stars++
			if i > 0 && i < len(t)-1 {
				add("glob middle *")
			}
		case '?':
			add("glob ?")
		case '[':
			end := strings.IndexByte(t[i+1:], ']')
			if end < 0 {
				continue
			}
			body := t[i+1 : i+1+end]
			if end == 0 && i+2 < len(t) { // "[]...]": the ']' is in the set
				if e := strings.IndexByte(t[i+2:], ']'); e >= 0 {
					body = t[i+1 : i+2+e]
				}
			}
			switch {
			case strings.HasPrefix(body, "!"):
				add("glob [!x]")
			case len(body) >= 3 && strings.Contains(body[1:len(body)-1], "-"):
				add("glob [a-z]")
			default:
				add("glob [abc]")
			}
			i += len(body) + 1
		}
	}
	if stars > 1 {
		add("glob several *")
	}
}
