package eval

import (
	"encoding/binary"

	"github.com/gtrace/gtrace/pkg/parse"
)

// MaxDynamicString is the most bytes of a __data_loc or __rel_loc
// string that a filter compares; a longer one is compared by its first
// MaxDynamicString bytes, as the BPF backend reads it (its buffer holds
// them and a NUL). No record of the kernel's ring buffer with its default
// 4 KiB pages holds a longer string.
const MaxDynamicString = 4095

// Context is what a record does not hold about its event.
type Context struct {
	PID  int32  // the task's pid (the kernel's common_pid); < 0: read common_pid from the record
	CPU  int    // the CPU the event ran on
	Comm string // the task's name
}

// Match reports whether the raw record rec passes the filter. Numbers
// missing from a short record read as 0 and strings as empty.
func Match(bf *parse.BoundFilter, rec []byte, c Context) bool {
	return match(bf.Root, rec, &c)
}

func match(e parse.BoundExpr, rec []byte, c *Context) bool {
	switch e := e.(type) {
	case *parse.BoundLogical:
		want := e.Op == parse.OpOr
		for _, x := range e.X {
			if match(x, rec, c) == want {
				return want
			}
		}
		return !want
	case *parse.BoundNot:
		return !match(e.X, rec, c)
	case *parse.BoundPred:
		return matchPred(e, rec, c)
	}
	return false
}

func matchPred(p *parse.BoundPred, rec []byte, c *Context) bool {
	switch p.Compare {
	case parse.CompareNumber:
		return compare(p.Op, number(p, rec, c), p.Val, p.Signed)
	case parse.CompareCPUs:
		return cpusScalar(p.Op, number(p, rec, c), p.CPUs)
	case parse.CompareCPUMask:
		return cpusMask(p.Op, payload(p.Field, rec), p.CPUs)
	case parse.CompareString:
		switch {
		case p.Operand == parse.OperandComm:
			return globMatch(p.Glob, c.Comm) != p.Negate
		case p.Field.Class == parse.ClassStringPtr:
			// The pointed-to memory is not in the record.
			return false
		}
		s := p.Field.Bytes(rec)
		if p.Field.Class != parse.ClassString && len(s) > MaxDynamicString {
			s = s[:MaxDynamicString]
		}
		return globMatch(p.Glob, s) != p.Negate
	}
	// CompareFunction: the range that ResolveFunctions found; none
	// before, and nothing matches then.
	if p.FuncHi == 0 {
		return false
	}
	v := number(p, rec, c)
	return (v >= p.FuncLo && v < p.FuncHi) != p.Negate
}

// number reads a predicate's numeric operand, extended to 64 bits.
func number(p *parse.BoundPred, rec []byte, c *Context) uint64 {
	switch {
	case p.Operand == parse.OperandCPU:
		return uint64(int64(int32(c.CPU)))
	case p.Operand == parse.OperandPID && c.PID >= 0:
		return uint64(int64(c.PID))
	}
	end := p.Offset + p.Size
	if p.Offset < 0 || end > len(rec) {
		return 0
	}
	var v uint64
	switch b := rec[p.Offset:end]; p.Size {
	case 1:
		v = uint64(b[0])
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
	default:
		v = binary.LittleEndian.Uint64(b)
	}
	if p.Signed && p.Size < 8 {
		sh := uint(64 - 8*p.Size)
		v = uint64(int64(v<<sh) >> sh)
	}
	return v
}

func compare(op parse.CmpOp, a, b uint64, signed bool) bool {
	switch op {
	case parse.CmpEQ:
		return a == b
	case parse.CmpNE:
		return a != b
	case parse.CmpAnd:
		return a&b != 0
	}
	if signed {
		x, y := int64(a), int64(b)
		switch op {
		case parse.CmpLT:
			return x < y
		case parse.CmpLE:
			return x <= y
		case parse.CmpGT:
			return x > y
		case parse.CmpGE:
			return x >= y
		}
		return false
	}
	switch op {
	case parse.CmpLT:
		return a < b
	case parse.CmpLE:
		return a <= b
	case parse.CmpGT:
		return a > b
	case parse.CmpGE:
		return a >= b
	}
	return false
}

// cpusScalar compares a number with a CPU list as the kernel does: & is
// "in the list", == "the list is exactly this CPU".
func cpusScalar(op parse.CmpOp, v uint64, cpus []parse.CPURange) bool {
	in := false
	for _, r := range cpus {
		if v >= uint64(r.First) && v <= uint64(r.Last) {
			in = true
			break
		}
	}
	if op == parse.CmpAnd {
		return in
	}
	only := in && single(cpus)
	return only == (op == parse.CmpEQ)
}

// single reports whether a CPU list names exactly one CPU.
func single(cpus []parse.CPURange) bool {
	for _, r := range cpus[1:] {
		if r != cpus[0] {
			return false
		}
	}
	return cpus[0].First == cpus[0].Last
}

// cpusMask compares a cpumask (a little-endian bitmap) with a CPU list:
// & is "they intersect", == "the same set".
func cpusMask(op parse.CmpOp, mask []byte, cpus []parse.CPURange) bool {
	inList := func(cpu int) bool {
		for _, r := range cpus {
			if cpu >= r.First && cpu <= r.Last {
				return true
			}
		}
		return false
	}
	bit := func(cpu int) bool { return cpu/8 < len(mask) && mask[cpu/8]&(1<<(cpu%8)) != 0 }
	if op == parse.CmpAnd {
		for _, r := range cpus {
			for cpu := r.First; cpu <= r.Last && cpu/8 < len(mask); cpu++ {
				if bit(cpu) {
					return true
				}
			}
		}
		return false
	}
	equal := true
	for cpu := 0; cpu < 8*len(mask) && equal; cpu++ {
		equal = bit(cpu) == inList(cpu)
	}
	for _, r := range cpus {
		if r.Last >= 8*len(mask) {
			equal = false
		}
	}
	return equal == (op == parse.CmpEQ)
}

// payload returns the bytes a __data_loc or __rel_loc field points at, or
// nil when the location is outside the record.
func payload(f *parse.Field, rec []byte) []byte {
	if f.Offset+4 > len(rec) {
		return nil
	}
	loc := binary.LittleEndian.Uint32(rec[f.Offset:])
	off, n := int(loc&0xffff), int(loc>>16)
	if f.Class == parse.ClassRelLoc {
		off += f.Offset + 4
	}
	if off+n > len(rec) {
		return nil
	}
	return rec[off : off+n]
}
