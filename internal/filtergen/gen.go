package filtergen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Sample is one record of the event, with what the record does not hold.
type Sample struct {
	Rec  []byte // the raw record, common_type first
	CPU  int    // the CPU it was recorded on
	PID  int32  // the task's pid; < 0: the record's common_pid
	Comm string // the task's name
}

// Options say what a Generator may write.
type Options struct {
	// Kernel keeps to what the kernel's own filter parser accepts: no
	// unquoted strings (grammar.md §12.4) and CPU numbers of CPUS{} lists
	// at most MaxCPU.
	Kernel bool
	// MaxCPU is the largest CPU number of a CPUS{} list; 0 means any the
	// language allows.
	MaxCPU int
	// Skip leaves out fields it returns true for; nil keeps every field
	// that a filter can compare.
	Skip func(*parse.Field) bool
	// Pseudo adds the pseudo-fields cpu and comm (and their other names)
	// that the event's own fields do not shadow.
	Pseudo bool
}

// Generator writes random filters for one event format.
type Generator struct {
	r      *rand.Rand
	o      Options
	format *parse.Format
	fields []*operand
	maxCPU int
}

// operandKind is how a generator compares an operand.
type operandKind int

const (
	kindNumber operandKind = iota
	kindString
	kindMask
)

// operand is a left-hand side with the values the samples give it.
type operand struct {
	name  string
	kind  operandKind
	size  int  // kindNumber: bytes compared
	sign  bool // kindNumber: compared signed
	nums  []uint64
	strs  []string
	masks [][]int // kindMask: the CPUs of each sample's mask
}

// New returns a generator for the event format f, whose constants come
// from the samples (records of f). Fields that filters cannot compare
// (arrays of numbers, char pointers, which need memory outside the
// record) are left out. It fails when no field is left.
func New(r *rand.Rand, f *parse.Format, samples []Sample, o Options) (*Generator, error) {
	g := &Generator{r: r, o: o, format: f, maxCPU: parse.MaxCPU - 1}
	if o.MaxCPU > 0 {
		g.maxCPU = min(o.MaxCPU, parse.MaxCPU-1)
	}
	for i := range f.Fields {
		fld := &f.Fields[i]
		if fld.Class == parse.ClassStringPtr || (o.Skip != nil && o.Skip(fld)) {
			continue
		}
		if op := g.probe(fld.Name, samples); op != nil {
			g.fields = append(g.fields, op)
		}
	}
	if o.Pseudo {
		for _, name := range []string{"common_cpu", "cpu", "CPU", "comm", "COMM"} {
			if f.Field(name) != nil {
				continue
			}
			if op := g.probe(name, samples); op != nil {
				g.fields = append(g.fields, op)
			}
		}
	}
	if len(g.fields) == 0 {
		return nil, fmt.Errorf("filtergen: %s has no field a filter can compare", f.FullName())
	}
	return g, nil
}

// probe finds how the binder reads name, by binding a predicate of each
// class, and collects the samples' values of it.
func (g *Generator) probe(name string, samples []Sample) *operand {
	for _, try := range []string{name + " == 0", name + ` == ""`, name + " & CPUS{0}"} {
		bp := bindOne(try, g.format)
		if bp == nil {
			continue
		}
		op := &operand{name: name, size: bp.Size, sign: bp.Signed}
		for _, s := range samples {
			switch bp.Compare {
			case parse.CompareNumber:
				op.nums = append(op.nums, number(bp, s))
			case parse.CompareString:
				if bp.Operand == parse.OperandComm {
					op.strs = append(op.strs, s.Comm)
				} else {
					op.strs = append(op.strs, string(bp.Field.Bytes(s.Rec)))
				}
			case parse.CompareCPUMask:
				op.masks = append(op.masks, maskCPUs(bp.Field, s.Rec))
			}
		}
		switch bp.Compare {
		case parse.CompareString:
			op.kind = kindString
		case parse.CompareCPUMask:
			op.kind = kindMask
		}
		return op
	}
	return nil
}

// bindOne binds a one-predicate filter, or returns nil.
func bindOne(src string, f *parse.Format) *parse.BoundPred {
	e, err := parse.ParseFilter("probe", src)
	if err != nil {
		return nil
	}
	bf, err := parse.BindFilter("probe", src, e, f)
	if err != nil {
		return nil
	}
	bp, _ := bf.Root.(*parse.BoundPred)
	return bp
}

// number reads what a numeric predicate compares, extended to 64 bits.
func number(bp *parse.BoundPred, s Sample) uint64 {
	switch {
	case bp.Operand == parse.OperandCPU:
		return uint64(int64(s.CPU))
	case bp.Operand == parse.OperandPID && s.PID >= 0:
		return uint64(int64(s.PID))
	}
	end := bp.Offset + bp.Size
	if end > len(s.Rec) {
		return 0
	}
	var v uint64
	switch b := s.Rec[bp.Offset:end]; bp.Size {
	case 1:
		v = uint64(b[0])
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
	default:
		v = binary.LittleEndian.Uint64(b)
	}
	return extend(v, bp.Size, bp.Signed)
}

// extend cuts v to size bytes and widens it back, with the sign when
// signed.
func extend(v uint64, size int, signed bool) uint64 {
	if size >= 8 {
		return v
	}
	sh := uint(64 - 8*size)
	if signed {
		return uint64(int64(v<<sh) >> sh)
	}
	return v << sh >> sh
}

// maskCPUs returns the CPUs set in a __data_loc cpumask.
func maskCPUs(fld *parse.Field, rec []byte) []int {
	var cpus []int
	for i, b := range fld.Bytes(rec) {
		for bit := range 8 {
			if b&(1<<bit) != 0 {
				cpus = append(cpus, 8*i+bit)
			}
		}
	}
	return cpus
}

// Filter returns a new filter: one to a few levels of &&, ||, ! and
// parentheses over predicates.
func (g *Generator) Filter() string {
	s, _ := g.expr(g.r.IntN(4))
	return s
}

// Precedences of generated text: what a parent must parenthesise.
const (
	precOr = iota + 1
	precAnd
	precAtom
)

// expr returns an expression at most depth levels deep and how tightly
// it binds.
func (g *Generator) expr(depth int) (string, int) {
	if depth == 0 || g.r.IntN(3) == 0 {
		return g.pred(), precAtom
	}
	switch g.r.IntN(5) {
	case 0, 1:
		return g.chain(depth, "&&", precAnd), precAnd
	case 2, 3:
		return g.chain(depth, "||", precOr), precOr
	}
	x, prec := g.expr(depth - 1)
	if prec < precAtom || g.r.IntN(4) == 0 {
		x = "(" + g.space() + x + g.space() + ")"
	}
	return strings.Repeat("!", 1+g.r.IntN(2)) + g.space() + x, precAtom
}

// chain joins two or three operands with op; an operand that binds less
// tightly than prec, and now and then one that does not need it, is
// parenthesised.
func (g *Generator) chain(depth int, op string, prec int) string {
	n := 2 + g.r.IntN(2)
	parts := make([]string, n)
	for i := range parts {
		x, p := g.expr(depth - 1)
		if p < prec || g.r.IntN(6) == 0 {
			x = "(" + x + ")"
		}
		parts[i] = x
	}
	return strings.Join(parts, g.space()+op+g.space())
}

// space is the blank around an operator: usually one space, sometimes
// none or several.
func (g *Generator) space() string {
	switch g.r.IntN(8) {
	case 0:
		return ""
	case 1:
		return "  "
	}
	return " "
}

// pred returns one predicate on a random operand.
func (g *Generator) pred() string {
	op := g.fields[g.r.IntN(len(g.fields))]
	var cmp, val string
	switch op.kind {
	case kindString:
		cmp, val = g.stringPred(op)
	case kindMask:
		cmp, val = pick(g.r, "&", "==", "!="), g.cpus(pickSlice(g.r, op.masks))
	default:
		cmp, val = g.numberPred(op)
	}
	return op.name + g.space() + cmp + g.space() + val
}

func pick(r *rand.Rand, s ...string) string { return s[r.IntN(len(s))] }

// pickSlice returns a random element of s, or the zero value.
func pickSlice[T any](r *rand.Rand, s []T) T {
	var zero T
	if len(s) == 0 {
		return zero
	}
	return s[r.IntN(len(s))]
}

// numberPred returns an operator and a constant for a number, or a CPU
// list now and then.
func (g *Generator) numberPred(op *operand) (string, string) {
	v := pickSlice(g.r, op.nums)
	if g.r.IntN(8) == 0 {
		cpu := int(v)
		if v > uint64(g.maxCPU) || (op.sign && int64(v) < 0) {
			cpu = g.r.IntN(g.maxCPU + 1)
		}
		return pick(g.r, "&", "==", "!="), g.cpus([]int{cpu})
	}
	cmp := pick(g.r, "==", "!=", "<", "<=", ">", ">=", "&")
	if cmp == "&" {
		return cmp, g.literal(g.mask(v, op), op)
	}
	return cmp, g.literal(g.near(v, op), op)
}

// near returns a constant near v that op's type can hold.
func (g *Generator) near(v uint64, op *operand) uint64 {
	bits := uint(8 * op.size)
	switch g.r.IntN(10) {
	case 0:
		v = 0
	case 1: // the type's largest value
		v = ^uint64(0) >> (64 - bits)
		if op.sign {
			v >>= 1
		}
	case 2: // the smallest
		v = 0
		if op.sign {
			v = ^uint64(0) << (bits - 1)
		}
	case 3:
		v = g.r.Uint64()
	case 4, 5:
		v += uint64(g.r.IntN(5)) - 2
	case 6:
		v += uint64(g.r.IntN(200)) - 100
	}
	return extend(v, op.size, op.sign)
}

// mask returns a constant for &: a bit that v has, v itself, a bit it
// lacks, or random bits.
func (g *Generator) mask(v uint64, op *operand) uint64 {
	bits := 8 * op.size
	switch g.r.IntN(4) {
	case 0:
		if v != 0 {
			set := []int{}
			for i := range bits {
				if v&(1<<i) != 0 {
					set = append(set, i)
				}
			}
			v = 1 << pickSlice(g.r, set)
		}
	case 1:
		v = 1 << g.r.IntN(bits)
	case 2:
		v = g.r.Uint64() >> g.r.IntN(64)
	}
	return extend(v, op.size, op.sign)
}

// literal writes v as op's type reads it: negative with a '-' when op is
// signed, in decimal, hex or octal.
func (g *Generator) literal(v uint64, op *operand) string {
	sign, mag := "", v
	if op.sign && int64(v) < 0 {
		sign, mag = "-", -v
	}
	switch g.r.IntN(6) {
	case 0:
		return sign + "0x" + strconv.FormatUint(mag, 16)
	case 1:
		return sign + "0X" + strings.ToUpper(strconv.FormatUint(mag, 16))
	case 2:
		return sign + "0" + strconv.FormatUint(mag, 8)
	}
	return sign + strconv.FormatUint(mag, 10)
}

// cpus writes a CPU list near the CPUs given: them, ranges around or
// beside them, or other CPUs.
func (g *Generator) cpus(near []int) string {
	c := g.r.IntN(g.maxCPU + 1)
	if len(near) > 0 && g.r.IntN(4) != 0 {
		c = min(near[g.r.IntN(len(near))], g.maxCPU)
	}
	var items []string
	switch g.r.IntN(5) {
	case 0:
		lo, hi := max(0, c-g.r.IntN(3)), min(g.maxCPU, c+g.r.IntN(3))
		items = append(items, fmt.Sprintf("%d-%d", lo, hi))
	case 1: // the CPUs beside c
		if c > 0 {
			items = append(items, strconv.Itoa(c-1))
		}
		if c < g.maxCPU {
			items = append(items, strconv.Itoa(c+1))
		}
	case 2:
		for _, x := range near {
			if x <= g.maxCPU {
				items = append(items, strconv.Itoa(x))
			}
		}
	case 3:
		items = append(items, strconv.Itoa(g.r.IntN(g.maxCPU+1)), strconv.Itoa(c))
	}
	if len(items) == 0 {
		items = append(items, strconv.Itoa(c))
	}
	return "CPUS{" + strings.Join(items, ",") + "}"
}

// stringPred returns an operator and a pattern for a string.
func (g *Generator) stringPred(op *operand) (string, string) {
	s := pickSlice(g.r, op.strs)
	if len(s) > maxSample {
		s = s[:maxSample]
	}
	if strings.Contains(s, `"`) && strings.Contains(s, "'") {
		s = strings.NewReplacer(`"`, "", "'", "").Replace(s)
	}
	if g.r.IntN(6) == 0 {
		s = mutate(g.r, s)
	}
	cmp := pick(g.r, "==", "!=", "~", "~", "~")
	pat := s
	if cmp == "~" {
		pat = g.glob(s)
	}
	return cmp, g.quote(pat, cmp)
}

// maxSample bounds the sample strings that patterns are built from, well
// below the longest string constant.
const maxSample = 200

// mutate changes, adds or drops a byte of s.
func mutate(r *rand.Rand, s string) string {
	b := []byte(s)
	i := 0
	if len(b) > 0 {
		i = r.IntN(len(b))
	}
	switch r.IntN(3) {
	case 0:
		if len(b) > 0 {
			b[i]++
			if b[i] == 0 {
				b[i] = 'a'
			}
			return string(b)
		}
		return "x"
	case 1:
		return s[:i] + "x" + s[i:]
	}
	if len(b) > 0 {
		return s[:i] + s[i+1:]
	}
	return s
}

// Glob forms a pattern can take.
var globForms = []string{"exact", "prefix", "suffix", "substr", "middle", "stars", "question", "set", "range", "notset", "star"}

// glob returns a pattern of a random form built around s, negated now
// and then with a leading '!'.
func (g *Generator) glob(s string) string {
	n := len(s)
	cut := func() int { return g.r.IntN(n + 1) }
	i, j := cut(), cut()
	if i > j {
		i, j = j, i
	}
	var p string
	switch pick(g.r, globForms...) {
	case "exact":
		p = esc(s)
	case "prefix":
		p = esc(s[:i]) + "*"
	case "suffix":
		p = "*" + esc(s[i:])
	case "substr":
		p = "*" + esc(s[i:j]) + "*"
	case "middle":
		p = esc(s[:i]) + "*" + esc(s[j:])
	case "stars":
		k := i + g.r.IntN(j-i+1)
		p = esc(s[:i]) + "*" + esc(s[i:k]) + "*" + esc(s[j:])
		if g.r.IntN(2) == 0 {
			p = "*" + p
		}
	case "question":
		p = g.oneByte(s, func(c byte) string { return "?" })
	case "set":
		p = g.oneByte(s, func(c byte) string { return "[" + setOf(c, pickByte(g.r), pickByte(g.r)) + "]" })
	case "range":
		p = g.oneByte(s, func(c byte) string { return g.class(c) })
	case "notset":
		p = g.oneByte(s, func(c byte) string {
			x := c
			if g.r.IntN(2) == 0 {
				x = pickByte(g.r)
			}
			return "[!" + setOf(x) + "]"
		})
	case "star":
		p = "*"
	}
	if g.r.IntN(6) == 0 {
		p = "!" + p
	}
	return p
}

// oneByte replaces a byte of s (or, for an empty s, adds one) by what
// class returns for it, the rest escaped; a * at one end now and then.
func (g *Generator) oneByte(s string, class func(c byte) string) string {
	if s == "" {
		return class('a')
	}
	i := g.r.IntN(len(s))
	p := esc(s[:i]) + class(s[i]) + esc(s[i+1:])
	switch g.r.IntN(4) {
	case 0:
		p = esc(s[:i]) + class(s[i]) + "*"
	case 1:
		p = "*" + class(s[i]) + esc(s[i+1:])
	}
	return p
}

func pickByte(r *rand.Rand) byte { return "abcxyz019_-/:."[r.IntN(14)] }

// setOf writes the bytes of a [...] set; ']' goes first and '-' last, as
// they mean themselves there, and '!' is not first.
func setOf(cs ...byte) string {
	var first, mid, last string
	for _, c := range cs {
		switch c {
		case ']':
			first = "]"
		case '-':
			last = "-"
		case '\\':
			mid += `\\`
		default:
			mid += string(c)
		}
	}
	if first == "" && strings.HasPrefix(mid, "!") {
		mid = mid[1:] + "!"
	}
	return first + mid + last
}

// class returns a [a-z] range around c, or now and then beside it; a
// set of c when an end of the range would be a byte that means something
// else there (']', '-', '!', or NUL, which ends the string).
func (g *Generator) class(c byte) string {
	lo, hi := int(c)-g.r.IntN(3), int(c)+g.r.IntN(3)
	if g.r.IntN(4) == 0 {
		lo, hi = int(c)+1, int(c)+1+g.r.IntN(3)
	}
	for _, e := range []int{lo, hi} {
		if e < 1 || e > 255 || strings.IndexByte("]-!", byte(e)) >= 0 {
			return "[" + setOf(c) + "]"
		}
	}
	return "[" + string([]byte{byte(lo)}) + "-" + string([]byte{byte(hi)}) + "]"
}

// esc escapes the glob metacharacters of s.
func esc(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// quote writes a string constant: in double or single quotes, or bare
// when the language allows and Kernel is off.
func (g *Generator) quote(s, cmp string) string {
	if !g.o.Kernel && bare(s) && g.r.IntN(5) == 0 {
		return s
	}
	dq, sq := `"`+s+`"`, "'"+s+"'"
	switch {
	case strings.Contains(s, `"`):
		return sq
	case strings.Contains(s, "'"):
		return dq
	case g.r.IntN(3) == 0:
		return sq
	}
	return dq
}

// bare reports whether s reads back as the same unquoted word.
func bare(s string) bool {
	if s == "" || s[0] == '-' || (s[0] >= '0' && s[0] <= '9') || strings.HasPrefix(s, "CPUS") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`=!<>~&|"'()`, c) >= 0 {
			return false
		}
	}
	return true
}
