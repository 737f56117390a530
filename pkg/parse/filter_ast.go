package parse

// Expr is a node of a filter expression: *Logical, *Not or *Pred.
// Offsets are byte offsets into the filter source.
type Expr interface {
	// Span returns the byte range of the node in the source.
	Span() (off, end int)
	// String returns canonical filter text that parses to the same tree.
	String() string
}

// LogicalOp is && or ||.
type LogicalOp int

// Logical operators.
const (
	OpAnd LogicalOp = iota // &&
	OpOr                   // ||
)

// Logical is L && R or L || R.
type Logical struct {
	Op   LogicalOp
	L, R Expr
}

// Not is !X.
type Not struct {
	Off int // offset of the '!'
	X   Expr
}

// CmpOp is a predicate's comparison operator.
type CmpOp int

// Comparison operators, in the kernel's longest-first matching order.
const (
	CmpGlob CmpOp = iota // ~
	CmpNE                // !=
	CmpEQ                // ==
	CmpLE                // <=
	CmpLT                // <
	CmpGE                // >=
	CmpGT                // >
	CmpAnd               // &
)

var cmpText = [...]string{"~", "!=", "==", "<=", "<", ">=", ">", "&"}

func (o CmpOp) String() string { return cmpText[o] }

// ValueKind is the lexical kind of a predicate's right-hand side.
type ValueKind int

// Value kinds.
const (
	ValNumber ValueKind = iota // -12, 0x1f, 010 (octal)
	ValString                  // "abc" or 'abc'
	ValCPUs                    // CPUS{0-3,7}
	ValWord                    // an unquoted word that is not a number (a function name, or a bare string)
)

// Value is a predicate's right-hand side as written.
type Value struct {
	Kind     ValueKind
	Text     string // the token as written (quotes included)
	Str      string // ValString: the text between the quotes; ValCPUs: the list; ValWord: the word
	Num      uint64 // ValNumber: the magnitude, parsed with base auto-detect
	Neg      bool   // ValNumber: a leading '-'
	Off, End int
}

// Pred is one comparison: FIELD[.MOD] OP VALUE.
type Pred struct {
	Field    string // field name as written
	Mod      string // "", "ustring" or "function"
	FieldOff int
	FieldEnd int // end of the field name including any modifier
	Op       CmpOp
	OpOff    int
	Value    Value
}

// Span implements Expr.
func (l *Logical) Span() (int, int) {
	off, _ := l.L.Span()
	_, end := l.R.Span()
	return off, end
}

// Span implements Expr.
func (n *Not) Span() (int, int) {
	_, end := n.X.Span()
	return n.Off, end
}

// Span implements Expr.
func (p *Pred) Span() (int, int) { return p.FieldOff, p.Value.End }
