package report

import "strconv"

// paramKind is the type of a helper function's parameter.
type paramKind uint8

const (
	paramNum paramKind = iota // int, long or pointer: evaluated as a number
	paramPtr                  // a pointer into the record
)

// helperFunc is a function that trace-cmd's plugins let print fmts call.
type helperFunc struct {
	params []paramKind
	// call prints into b and returns the function's value; args hold
	// the evaluated parameters, ptrs the record bytes of paramPtr ones.
	call func(b []byte, args []uint64, ptrs [][]byte) ([]byte, uint64)
}

// helperFuncs are the functions of libtraceevent's plugins (jbd2,
// cfg80211) that print fmts on current kernels use.
var helperFuncs = map[string]*helperFunc{
	// plugin_jbd2: "major:minor" of a dev_t.
	"jbd2_dev_to_name": {params: []paramKind{paramNum}, call: func(b []byte, a []uint64, _ [][]byte) ([]byte, uint64) {
		dev := uint32(a[0])
		b = strconv.AppendInt(b, int64(int32(dev>>20)), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(int32(dev&(1<<20-1))), 10)
		return b, 0
	}},
	// plugin_jbd2: prints its argument and returns it unchanged.
	"jiffies_to_msecs": {params: []paramKind{paramNum}, call: func(b []byte, a []uint64, _ [][]byte) ([]byte, uint64) {
		return strconv.AppendInt(b, int64(a[0]), 10), a[0]
	}},
	// plugin_cfg80211: a little-endian u16 behind a pointer.
	"__le16_to_cpup": {params: []paramKind{paramPtr}, call: func(b []byte, _ []uint64, p [][]byte) ([]byte, uint64) {
		if len(p[0]) < 2 {
			return b, 0
		}
		return b, uint64(p[0][0]) | uint64(p[0][1])<<8
	}},
}

// callHelper is process_defined_func: it evaluates the arguments, calls
// the helper (which prints into b) and returns its value.
func (p *printer) callHelper(b []byte, r *rec, n *node) ([]byte, uint64) {
	args := make([]uint64, len(n.args))
	ptrs := make([][]byte, len(n.args))
	for i, a := range n.args {
		if n.fn.params[i] == paramPtr {
			if a.kind == nDynArray && a.field != nil {
				off, _ := p.dynOffset(a.field, r.data)
				ptrs[i] = bytesAt(r.data, off)
			}
			continue
		}
		args[i] = p.evalNum(r, a)
	}
	return n.fn.call(b, args, ptrs)
}
