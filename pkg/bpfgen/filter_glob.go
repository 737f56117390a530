package bpfgen

// Full shell globs (?, *, [...], \x anywhere) run as a bit-parallel NFA.
//
// Every glob token but * consumes exactly one byte, so a pattern of m such
// tokens has the states 0..m ("the first k tokens matched"), each a bit of
// a 64-bit register. A * before token k makes state k loop on any byte.
// One pass over the string, one byte per iteration, computes
//
//	D = ((D << 1) & B[c]) | (D & loops)
//
// where bit k+1 of B[c] says that token k matches the byte c; the string
// matches when bit m is set at its NUL. B[c] is computed without branches
// (a token's test is 0 or -1 by sign arithmetic), so the verifier walks
// the loop once per byte of the longest string, whatever the pattern.
// This decides exactly what the interpreter's backtracking matcher
// (pkg/eval) decides: both say whether some assignment of the string's
// bytes to the tokens and stars exists.

import (
	"fmt"
	"math/bits"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// maxGlobTokens is the most one-byte tokens a glob may have in BPF: their
// states and state 0 fill a 64-bit register.
const maxGlobTokens = 63

// byteSet is a set of byte values.
type byteSet [4]uint64

func (s *byteSet) add(lo, hi int) {
	for c := lo; c <= hi; c++ {
		s[c/64] |= 1 << (c % 64)
	}
}

func (s byteSet) has(c int) bool { return s[c/64]&(1<<(c%64)) != 0 }

// ranges returns the runs of s, or of its complement, within 1..255 (a
// string's bytes are never NUL).
func (s byteSet) ranges(in bool) [][2]int {
	var rs [][2]int
	for c := 1; c <= 255; c++ {
		if s.has(c) != in {
			continue
		}
		if n := len(rs); n > 0 && rs[n-1][1] == c-1 {
			rs[n-1][1] = c
		} else {
			rs = append(rs, [2]int{c, c})
		}
	}
	return rs
}

// compiledGlob is a shell pattern as one-byte tokens and the states that
// a * makes loop.
type compiledGlob struct {
	tokens []byteSet
	loops  uint64 // bit k: a * precedes token k (k == len(tokens): the pattern ends with *)
}

// compileGlob splits a pattern as pkg/eval's matcher reads it: ? is any
// byte, [set] and [!set] a class (a ']' first is a member, a-b a range,
// an unclosed class a literal '['), \x the byte x, a trailing \ itself.
func compileGlob(pat string) compiledGlob {
	var g compiledGlob
	for p := 0; p < len(pat); {
		var s byteSet
		switch pat[p] {
		case '*':
			if len(g.tokens) < 64 {
				g.loops |= 1 << len(g.tokens)
			}
			p++
			continue
		case '?':
			s.add(0, 255)
			p++
		default:
			if pat[p] == '[' {
				if cls, next, ok := globClass(pat, p+1); ok {
					s, p = cls, next
					break
				}
			}
			d := pat[p]
			if d == '\\' && p+1 < len(pat) {
				p++
				d = pat[p]
			}
			s.add(int(d), int(d))
			p++
		}
		g.tokens = append(g.tokens, s)
	}
	return g
}

// globClass reads the class that starts at pat[j], just after its '['.
// It returns the bytes in the class, where the pattern continues, and
// false when the class is not closed.
func globClass(pat string, j int) (byteSet, int, bool) {
	var s byteSet
	inverted := j < len(pat) && pat[j] == '!'
	if inverted {
		j++
	}
	for first := true; ; first = false {
		if j >= len(pat) {
			return s, 0, false
		}
		a := pat[j]
		j++
		if a == ']' && !first {
			if inverted {
				for i := range s {
					s[i] = ^s[i]
				}
			}
			return s, j, true
		}
		b := a
		if j < len(pat) && pat[j] == '-' {
			if j+1 == len(pat) {
				return s, 0, false
			}
			if pat[j+1] != ']' {
				b = pat[j+1]
				j += 2
			}
		}
		s.add(int(a), int(b))
	}
}

// glob matches a full shell glob. The string is copied (the task name
// and what fits to the stack's scratch area, a .ustring, a dynamic string
// and a large array to the filter's buffer), then one loop runs the NFA
// over it: R7 holds the states, R8 the cursor, R0 the byte, R2 the
// tokens it matches.
func (g *filterGen) glob(p *parse.BoundPred, t, f, fault string) predResult {
	gl := compileGlob(p.Glob.Text)
	m := len(gl.tokens)
	a := g.area(p)
	if m > a.max {
		return g.constTest(false) // longer than any string the copy holds
	}
	switch {
	case p.Operand == parse.OperandComm:
		g.emit(
			asm.Mov.Reg(asm.R1, asm.R10),
			asm.Add.Imm(asm.R1, int32(g.scratch.Off)),
			asm.Mov.Imm(asm.R2, CommLen),
			asm.FnGetCurrentComm.Call(),
		)
	case p.Field.Class == parse.ClassString:
		g.readArray(p, a, fault)
		g.emit(asm.JSLT.Imm(asm.R0, 1, fault))
	default:
		g.readStr(p, a, fault)
		g.emit(asm.JSLT.Imm(asm.R0, 1, fault))
	}
	base, off := g.base(a)
	// Each branch's way out is followed first and its way on stacked,
	// as in whole's loop: the verifier's stack stays shallow.
	loop, end := g.b.Label("filter_glob"), g.b.Label("filter_glob_end")
	step, on, more := g.b.Label("filter_glob_step"), g.b.Label("filter_glob_on"), g.b.Label("filter_glob_more")
	start := len(g.b.insns)
	g.emit(asm.Mov.Imm(asm.R7, 1), asm.Mov.Imm(asm.R8, 0))
	g.b.Mark(loop)
	g.emit(
		asm.Mov.Reg(asm.R1, base),
		asm.Add.Reg(asm.R1, asm.R8),
		asm.LoadMem(asm.R0, asm.R1, int16(off), asm.Byte),
		asm.JNE.Imm(asm.R0, 0, step),
		asm.Ja.Label(end),
	)
	g.b.Mark(step)
	g.globByte(gl)
	if gl.loops&(1<<m) != 0 {
		// The pattern ends with *: once all tokens matched, so does the
		// rest of the string.
		g.emit(asm.Mov.Reg(asm.R3, asm.R7))
		if m > 0 {
			g.emit(asm.RSh.Imm(asm.R3, int32(m)))
		}
		g.emit(asm.JEq.Imm(asm.R3, 0, on), asm.Ja.Label(t))
		g.b.Mark(on)
	}
	if gl.loops&1 == 0 {
		// No state left: no match (with a leading * state 0 stays).
		g.emit(asm.JNE.Imm(asm.R7, 0, more), asm.Ja.Label(f))
		g.b.Mark(more)
	}
	g.emit(
		asm.Add.Imm(asm.R8, 1),
		asm.JLT.Imm(asm.R8, int32(a.max), loop),
	)
	g.b.Mark(end)
	g.loopCost(a, start)
	if m > 0 {
		g.emit(asm.RSh.Imm(asm.R7, int32(m)))
	}
	return predResult{test: test{op: asm.JNE, dst: asm.R7}}
}

// globByte emits one step of the NFA on the byte in R0: R2 = B[c], then
// R7 = ((R7 << 1) & R2) | (R7 & loops). Clobbers R2-R4.
func (g *filterGen) globByte(gl compiledGlob) {
	// Tokens with the same set share one test; a set that holds every
	// byte is a constant.
	var always uint64
	var sets []byteSet
	at := map[byteSet]uint64{}
	for k, s := range gl.tokens {
		rs := s.ranges(true)
		switch {
		case len(rs) == 0:
			continue // never matches
		case len(rs) == 1 && rs[0] == [2]int{1, 255}:
			always |= 1 << (k + 1)
			continue
		}
		if at[s] == 0 {
			sets = append(sets, s)
		}
		at[s] |= 1 << (k + 1)
	}
	init := always != 0
	if init || len(sets) == 0 {
		g.movConst(asm.R2, always)
	}
	for _, s := range sets {
		dst := asm.R3
		if !init {
			dst = asm.R2
		}
		g.inSet(dst, s)
		g.mulConst(dst, at[s])
		if init {
			g.emit(asm.Or.Reg(asm.R2, asm.R3))
		}
		init = true
	}
	g.emit(
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.LSh.Imm(asm.R3, 1),
		asm.And.Reg(asm.R3, asm.R2),
	)
	if gl.loops == 0 {
		g.emit(asm.Mov.Reg(asm.R7, asm.R3))
		return
	}
	g.andConst(asm.R7, gl.loops)
	g.emit(asm.Or.Reg(asm.R7, asm.R3))
}

// inSet sets dst to 1 when the byte in R0 (never NUL) is in s and to 0
// otherwise, testing the runs of s or of its complement, whichever are
// fewer. Clobbers R4. (0 or -1 from an arithmetic shift would be shorter
// to mask, but the verifier forks its state on AND or OR of such a value,
// once per token and byte.)
func (g *filterGen) inSet(dst asm.Register, s byteSet) {
	rs, invert := s.ranges(true), false
	if out := s.ranges(false); len(out) < len(rs) {
		rs, invert = out, true
	}
	for i, r := range rs {
		reg := dst
		if i > 0 {
			reg = asm.R4
		}
		// (c - lo) as an unsigned 9-bit number is below the run's width
		// exactly when c is in the run; the sign of the difference says.
		lo, width := r[0], r[1]-r[0]+1
		g.emit(asm.Mov.Reg(reg, asm.R0))
		switch {
		case width == 1:
			g.emit(asm.Xor.Imm(reg, int32(lo)), asm.Sub.Imm(reg, 1))
		case lo == 1:
			g.emit(asm.Sub.Imm(reg, int32(width+1)))
		default:
			g.emit(asm.Sub.Imm(reg, int32(lo)), asm.And.Imm(reg, 0x1ff), asm.Sub.Imm(reg, int32(width)))
		}
		g.emit(asm.RSh.Imm(reg, 63))
		if i > 0 {
			g.emit(asm.Or.Reg(dst, reg))
		}
	}
	if invert {
		g.emit(asm.Xor.Imm(dst, 1))
	}
}

// movConst sets dst to v.
func (g *filterGen) movConst(dst asm.Register, v uint64) {
	if v < 1<<31 {
		g.emit(asm.Mov.Imm(dst, int32(v)))
		return
	}
	g.emit(asm.LoadImm(dst, int64(v), asm.DWord))
}

// mulConst multiplies dst by v: a 0 or 1 in dst becomes 0 or v. A single
// bit is a shift.
func (g *filterGen) mulConst(dst asm.Register, v uint64) {
	switch {
	case v&(v-1) == 0:
		if k := bits.TrailingZeros64(v); k > 0 {
			g.emit(asm.LSh.Imm(dst, int32(k)))
		}
	case v < 1<<31:
		g.emit(asm.Mul.Imm(dst, int32(v)))
	default:
		g.movConst(asm.R4, v)
		g.emit(asm.Mul.Reg(dst, asm.R4))
	}
}

// andConst masks dst with v, through R4 when v does not fit an immediate.
func (g *filterGen) andConst(dst asm.Register, v uint64) {
	if v < 1<<31 {
		g.emit(asm.And.Imm(dst, int32(v)))
		return
	}
	g.movConst(asm.R4, v)
	g.emit(asm.And.Reg(dst, asm.R4))
}

// globError says why the BPF backend cannot match a full glob, or nil.
func globError(p *parse.BoundPred) string {
	m := len(compileGlob(p.Glob.Text).tokens)
	if m <= maxGlobTokens {
		return ""
	}
	switch {
	case p.Operand == parse.OperandComm && m > CommLen-1:
		return "" // longer than any task name: always false
	case p.Operand != parse.OperandComm && p.Field.Class == parse.ClassString && m > p.Field.Size:
		return "" // longer than the array: always false
	}
	return fmt.Sprintf("glob %s matches %d characters, more than the BPF backend's %d", p.Pred.Value.String(), m, maxGlobTokens)
}
