package parse

import (
	"strconv"
	"strings"
)

// sqlHint is what a statement looks like, for the syntax errors.
const sqlHint = "a statement is SELECT FIELDS FROM SYS.EVENT [AS start] [JOIN SYS.EVENT [AS end] ON start.F = end.G] [WHERE FILTER]"

// SQLStmt is a parsed sqlhist statement (libtracefs's tracefs_sql):
//
//	SELECT sel [, sel]... FROM event [AS alias]
//	  [JOIN event [AS alias] ON a = b [, a = b]...] [WHERE cond [&& cond]...]
//
// Every name keeps its offsets into Src, so the compiler's errors point at
// it.
type SQLStmt struct {
	Src     string
	Selects []*SQLSelect
	From    SQLTable
	Join    *SQLTable // nil: a histogram of the FROM event, no synthetic event
	On      []SQLMatch
	Where   []SQLCond // the conditions joined by the top-level && (or ','), each of one event
}

// SQLName is a name as written (a field, an event, a label), its leading
// backslash (which makes a keyword a field) dropped.
type SQLName struct {
	Text     string
	Off, End int
}

// SQLTable is the FROM or JOIN event and its alias ("" if none).
type SQLTable struct {
	Event SQLName // "event" or "sys.event"
	Alias SQLName
}

// SQLSelect is one selection: a field, or Left Op Right of two fields
// (Op '+' or '-'), optionally CAST to a hist type, and named by AS.
type SQLSelect struct {
	Left  SQLName
	Op    byte    // 0 for a plain field
	Right SQLName // with Op
	Cast  SQLName // CAST(Left AS Cast), or empty
	Label SQLName // AS Label, or empty
	Off   int     // the selection's first byte
	End   int
}

// SQLMatch is one pair of fields of ON: Left = Right.
type SQLMatch struct{ Left, Right SQLName }

// SQLCond is a WHERE condition: *SQLCompare, *SQLLogic or *SQLGroup.
type SQLCond interface{ sqlCond() }

// SQLCompare is FIELD OP VALUE; Op is one of == != < <= > >= & ~ (a lone
// = is ==). Value is a number or a quoted string, quotes kept.
type SQLCompare struct {
	Field  SQLName
	Op     string
	Value  SQLName
	String bool // Value is a quoted string
	Num    int64
}

// SQLLogic is Left && Right or Left || Right.
type SQLLogic struct {
	Op          string
	Left, Right SQLCond
}

// SQLGroup is (X), or !(X) / !X with Not.
type SQLGroup struct {
	Not bool
	X   SQLCond
}

func (*SQLCompare) sqlCond() {}
func (*SQLLogic) sqlCond()   {}
func (*SQLGroup) sqlCond()   {}

type sqlKind int

const (
	sqlEOF sqlKind = iota
	sqlWord
	sqlStr
	sqlNum
	sqlPunct
)

type sqlTok struct {
	kind     sqlKind
	text     string // the word (backslash dropped), the punctuation, the string with its quotes
	off, end int
	escaped  bool // a word written \word: never a keyword
}

var sqlKeywords = map[string]bool{"select": true, "as": true, "from": true, "join": true, "on": true, "where": true, "cast": true}

// sqlLex splits src into tokens, as sqlhist's lexer does: words are
// letters, digits, '_' and '.', not starting with a digit; a backslash
// before a word makes it a field even if it is a keyword; AND and OR are
// && and ||.
func sqlLex(src string) ([]sqlTok, *Error) {
	var toks []sqlTok
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\\' || isAlpha(c) || c == '_':
			start := i
			if c == '\\' {
				i++
				if i >= len(src) || !(isAlpha(src[i]) || src[i] == '_') {
					return nil, Errorf("sql", src, start, i, "a backslash must be followed by a field name")
				}
			}
			j := i
			for j < len(src) && (isAlpha(src[j]) || histIsDigit(src[j]) || src[j] == '_' || src[j] == '.' || src[j] == '-' && strings.EqualFold(src[i:j], "sym")) {
				j++
			}
			t := sqlTok{kind: sqlWord, text: src[i:j], off: start, end: j, escaped: c == '\\'}
			if !t.escaped {
				switch strings.ToLower(t.text) {
				case "and":
					t = sqlTok{kind: sqlPunct, text: "&&", off: start, end: j}
				case "or":
					t = sqlTok{kind: sqlPunct, text: "||", off: start, end: j}
				}
			}
			toks = append(toks, t)
			i = j
		case histIsDigit(c):
			j := i
			for j < len(src) && (isAlpha(src[j]) || histIsDigit(src[j]) || src[j] == '_') {
				j++
			}
			toks = append(toks, sqlTok{kind: sqlNum, text: src[i:j], off: i, end: j})
			i = j
		case c == '"':
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 {
				return nil, Errorf("sql", src, i, len(src), "unterminated string").WithHint("strings are in double quotes: \"...\"")
			}
			toks = append(toks, sqlTok{kind: sqlStr, text: src[i : i+j+2], off: i, end: i + j + 2})
			i += j + 2
		default:
			two := ""
			if i+1 < len(src) {
				two = src[i : i+2]
			}
			switch two {
			case "!=", "<=", ">=", "==", "&&", "||":
				toks = append(toks, sqlTok{kind: sqlPunct, text: two, off: i, end: i + 2})
				i += 2
				continue
			}
			if !strings.ContainsRune("<>&~!()-+*/,=", rune(c)) {
				return nil, Errorf("sql", src, i, i+1, "unexpected character %s", quoteByte(c)).WithHint(sqlHint)
			}
			toks = append(toks, sqlTok{kind: sqlPunct, text: src[i : i+1], off: i, end: i + 1})
			i++
		}
	}
	return append(toks, sqlTok{kind: sqlEOF, off: len(src), end: len(src)}), nil
}

func quoteByte(c byte) string {
	if c < ' ' || c >= 0x7f {
		return strconv.QuoteRune(rune(c))
	}
	return "'" + string(c) + "'"
}

type sqlParser struct {
	src  string
	toks []sqlTok
	pos  int
}

// ParseSQL parses an sqlhist statement. Keywords are not case sensitive.
// A bad statement is an *Error with the caret on the token that is wrong.
func ParseSQL(src string) (*SQLStmt, error) {
	toks, err := sqlLex(src)
	if err != nil {
		return nil, err
	}
	p := &sqlParser{src: src, toks: toks}
	s, perr := p.stmt()
	if perr != nil {
		return nil, perr
	}
	return s, nil
}

func (p *sqlParser) peek() sqlTok { return p.toks[p.pos] }
func (p *sqlParser) next() sqlTok {
	t := p.toks[p.pos]
	if t.kind != sqlEOF {
		p.pos++
	}
	return t
}

// keyword reports whether t is the keyword kw.
func (t sqlTok) keyword(kw string) bool {
	return t.kind == sqlWord && !t.escaped && strings.EqualFold(t.text, kw)
}

func (t sqlTok) punct(s string) bool { return t.kind == sqlPunct && t.text == s }

// isName reports whether t can be a field, event or label name.
func (t sqlTok) isName() bool {
	return t.kind == sqlWord && (t.escaped || !sqlKeywords[strings.ToLower(t.text)])
}

func (t sqlTok) describe() string {
	switch t.kind {
	case sqlEOF:
		return "the end of the statement"
	case sqlWord:
		if t.isName() {
			return "'" + t.text + "'"
		}
		return strings.ToUpper(t.text)
	}
	return "'" + t.text + "'"
}

func (p *sqlParser) errorf(t sqlTok, format string, args ...any) *Error {
	end := t.end
	if t.kind == sqlEOF {
		end = t.off
	}
	return Errorf("sql", p.src, t.off, end, format, args...)
}

func (p *sqlParser) expectKeyword(kw, what string) *Error {
	t := p.next()
	if !t.keyword(kw) {
		return p.errorf(t, "expected %s %s, found %s", strings.ToUpper(kw), what, t.describe()).WithHint(sqlHint)
	}
	return nil
}

func (p *sqlParser) expectPunct(s, what string) *Error {
	t := p.next()
	if !t.punct(s) {
		return p.errorf(t, "expected '%s' %s, found %s", s, what, t.describe())
	}
	return nil
}

func (p *sqlParser) name(what string) (SQLName, *Error) {
	t := p.next()
	if !t.isName() {
		e := p.errorf(t, "expected %s, found %s", what, t.describe())
		if t.kind == sqlWord {
			e.WithHint("write \\%s for a field named %s", t.text, t.text)
		}
		return SQLName{}, e
	}
	return SQLName{Text: t.text, Off: t.off, End: t.end}, nil
}

func (p *sqlParser) stmt() (*SQLStmt, *Error) {
	s := &SQLStmt{Src: p.src}
	if err := p.expectKeyword("select", "at the start"); err != nil {
		return nil, err
	}
	for {
		sel, err := p.selection()
		if err != nil {
			return nil, err
		}
		s.Selects = append(s.Selects, sel)
		if !p.peek().punct(",") {
			break
		}
		p.next()
	}
	if err := p.expectKeyword("from", "after the selection"); err != nil {
		return nil, err
	}
	var err *Error
	if s.From, err = p.table("the FROM event"); err != nil {
		return nil, err
	}
	if p.peek().keyword("join") {
		p.next()
		j, err := p.table("the JOIN event")
		if err != nil {
			return nil, err
		}
		s.Join = &j
		if err := p.expectKeyword("on", "after the JOIN event"); err != nil {
			return nil, err
		}
		for {
			m, err := p.match()
			if err != nil {
				return nil, err
			}
			s.On = append(s.On, m)
			if t := p.peek(); !t.punct(",") && !t.punct("&&") {
				break
			}
			p.next()
		}
	}
	if p.peek().keyword("where") {
		p.next()
		for {
			c, err := p.orList()
			if err != nil {
				return nil, err
			}
			s.Where = append(s.Where, c)
			if t := p.peek(); !t.punct(",") && !t.punct("&&") {
				break
			}
			p.next()
		}
	}
	if t := p.peek(); t.kind != sqlEOF {
		what := "JOIN, WHERE or the end of the statement"
		switch {
		case s.Where != nil:
			what = "'&&', '||' or the end of the statement"
		case s.Join != nil:
			what = "WHERE or the end of the statement"
		}
		return nil, p.errorf(t, "expected %s, found %s", what, t.describe()).WithHint(sqlHint)
	}
	return s, nil
}

// selection: field | (field) | field +- field | (field +- field) |
// CAST(field AS type), then [AS] label.
func (p *sqlParser) selection() (*SQLSelect, *Error) {
	first := p.peek()
	sel := &SQLSelect{Off: first.off}
	var err *Error
	switch {
	case first.keyword("cast"):
		p.next()
		if err := p.expectPunct("(", "after CAST"); err != nil {
			return nil, err
		}
		if sel.Left, err = p.name("a field to cast"); err != nil {
			return nil, err
		}
		if err := p.expectKeyword("as", "in CAST(FIELD AS TYPE)"); err != nil {
			return nil, err
		}
		if sel.Cast, err = p.name("a type (HEX, SYM, SYM-OFFSET, SYSCALL, EXECNAME, LOG2, BUCKETS=N, _COUNTER_)"); err != nil {
			return nil, err
		}
		if sel.Cast.Text == "buckets" || strings.EqualFold(sel.Cast.Text, "buckets") {
			if p.peek().punct("=") {
				p.next()
				n := p.next()
				if n.kind != sqlNum {
					return nil, p.errorf(n, "expected the bucket size after BUCKETS=, found %s", n.describe())
				}
				sel.Cast.Text += "=" + n.text
				sel.Cast.End = n.end
			}
		}
		if err := p.expectPunct(")", "to close CAST("); err != nil {
			return nil, err
		}
	case first.punct("("):
		p.next()
		if err := p.arith(sel); err != nil {
			return nil, err
		}
		if err := p.expectPunct(")", "to close the parenthesis"); err != nil {
			return nil, err
		}
	default:
		if err := p.arith(sel); err != nil {
			return nil, err
		}
	}
	sel.End = p.toks[p.pos-1].end
	if p.peek().keyword("as") {
		p.next()
		if sel.Label, err = p.name("a name after AS"); err != nil {
			return nil, err
		}
	} else if p.peek().isName() {
		sel.Label, _ = p.name("")
	}
	return sel, nil
}

// arith: field [(+|-) field].
func (p *sqlParser) arith(sel *SQLSelect) *Error {
	var err *Error
	if sel.Left, err = p.name("a field"); err != nil {
		return err
	}
	if t := p.peek(); t.punct("+") || t.punct("-") {
		p.next()
		sel.Op = t.text[0]
		if sel.Right, err = p.name("a field after '" + t.text + "'"); err != nil {
			return err
		}
	} else if t.punct("*") || t.punct("/") {
		return p.errorf(t, "only + and - of two fields are possible here").WithHint("a selection is a field, (A - B) or (A + B), of a field of each event")
	}
	return nil
}

func (p *sqlParser) table(what string) (SQLTable, *Error) {
	var tb SQLTable
	var err *Error
	if tb.Event, err = p.name(what); err != nil {
		return tb, err
	}
	if p.peek().keyword("as") {
		p.next()
		if tb.Alias, err = p.name("an alias after AS"); err != nil {
			return tb, err
		}
	} else if p.peek().isName() {
		tb.Alias, _ = p.name("")
	}
	if strings.Contains(tb.Alias.Text, ".") {
		return tb, Errorf("sql", p.src, tb.Alias.Off, tb.Alias.End, "an alias is a plain name, without '.'")
	}
	return tb, nil
}

func (p *sqlParser) match() (SQLMatch, *Error) {
	var m SQLMatch
	var err *Error
	if m.Left, err = p.name("a field of ON"); err != nil {
		return m, err
	}
	if t := p.next(); !t.punct("=") && !t.punct("==") {
		return m, p.errorf(t, "expected '=' between the fields of ON, found %s", t.describe()).WithHint("ON start.FIELD = end.FIELD [, start.FIELD = end.FIELD]...")
	}
	if m.Right, err = p.name("a field after '='"); err != nil {
		return m, err
	}
	return m, nil
}

// orList is a top-level condition: items joined by ||.
func (p *sqlParser) orList() (SQLCond, *Error) {
	c, err := p.item(true)
	if err != nil {
		return nil, err
	}
	for p.peek().punct("||") {
		p.next()
		r, err := p.item(true)
		if err != nil {
			return nil, err
		}
		c = &SQLLogic{Op: "||", Left: c, Right: r}
	}
	return c, nil
}

// andOr is a condition inside parentheses: items joined by && and ||,
// left to right.
func (p *sqlParser) andOr() (SQLCond, *Error) {
	c, err := p.item(false)
	if err != nil {
		return nil, err
	}
	for t := p.peek(); t.punct("||") || t.punct("&&"); t = p.peek() {
		p.next()
		r, err := p.item(false)
		if err != nil {
			return nil, err
		}
		c = &SQLLogic{Op: t.text, Left: c, Right: r}
	}
	return c, nil
}

// item: (andOr) | !(andOr) | !compare | compare.
func (p *sqlParser) item(top bool) (SQLCond, *Error) {
	t := p.peek()
	not := false
	if t.punct("!") {
		p.next()
		not = true
		t = p.peek()
	}
	if t.punct("(") {
		p.next()
		x, err := p.andOr()
		if err != nil {
			return nil, err
		}
		if err := p.expectPunct(")", "to close the parenthesis"); err != nil {
			return nil, err
		}
		return &SQLGroup{Not: not, X: x}, nil
	}
	c, err := p.compare()
	if err != nil {
		return nil, err
	}
	if not {
		return &SQLGroup{Not: true, X: c}, nil
	}
	return c, nil
}

var sqlCompareOps = map[string]bool{"<": true, ">": true, "<=": true, ">=": true, "=": true, "==": true, "!=": true, "&": true, "~": true}

func (p *sqlParser) compare() (*SQLCompare, *Error) {
	var c SQLCompare
	var err *Error
	if c.Field, err = p.name("a field to compare"); err != nil {
		return nil, err
	}
	op := p.next()
	if !sqlCompareOps[op.text] || op.kind != sqlPunct {
		return nil, p.errorf(op, "expected a comparison (== != < <= > >= & ~), found %s", op.describe())
	}
	c.Op = op.text
	if c.Op == "=" {
		c.Op = "=="
	}
	v := p.next()
	c.Value = SQLName{Text: v.text, Off: v.off, End: v.end}
	switch v.kind {
	case sqlStr:
		c.String = true
	case sqlNum:
		n, perr := strconv.ParseInt(v.text, 0, 64)
		if perr != nil {
			return nil, p.errorf(v, "bad number %q", v.text).WithHint("numbers are decimal, or hexadecimal with 0x")
		}
		c.Num = n
		if c.Op == "~" {
			return nil, p.errorf(v, "'~' compares with a string glob, not a number").WithHint("e.g. end.next_comm ~ \"cycl*\"")
		}
	default:
		return nil, p.errorf(v, "expected a number or a \"string\" after '%s', found %s", op.text, v.describe())
	}
	return &c, nil
}
