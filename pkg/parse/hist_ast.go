package parse

import "errors"

// HistMod is a hist key or value modifier (the text after the field's '.').
type HistMod int

// Hist modifiers, as the kernel names them.
const (
	ModNone       HistMod = iota //
	ModHex                       // hex
	ModSym                       // sym
	ModSymOffset                 // sym-offset
	ModExecname                  // execname
	ModSyscall                   // syscall
	ModLog2                      // log2
	ModBuckets                   // buckets
	ModUsecs                     // usecs
	ModPercent                   // percent
	ModGraph                     // graph
	ModStacktrace                // stacktrace
)

var histModNames = [...]string{"", "hex", "sym", "sym-offset", "execname", "syscall", "log2", "buckets", "usecs", "percent", "graph", "stacktrace"}

func (m HistMod) String() string { return histModNames[m] }

// HistField is a key or value: a field name with at most one modifier,
// a constant, or an expression of those (grammar §4.4).
type HistField struct {
	Name    string  // field name as the kernel prints it: "common_pid", "id", "hitcount", "common_cpu"; an expression's canonical text
	Mod     HistMod // modifier, ModNone if none
	Buckets uint64  // ModBuckets: the bucket size N (> 0)
	Off     int     // offset of the field in the spec source
	End     int     // end of the field (and modifier) in the spec source
	// Op is an expression's operator: '+', '-', '*', '/', or 'n' for the
	// unary -(...); 0 for a field or a constant.
	Op       byte
	Operands []HistField // an expression's operands: two, or one for 'n'
	Const    bool        // a constant, whose value is Value
	Value    uint64
}

// Usecs reports whether f is in microseconds: common_timestamp.usecs, or
// an expression of such operands.
func (f HistField) Usecs() bool {
	if f.Op != 0 {
		return f.Operands[0].Usecs()
	}
	return f.Mod == ModUsecs
}

// Timestamp reports whether f is or uses common_timestamp.
func (f HistField) Timestamp() bool {
	if f.Name == "common_timestamp" {
		return true
	}
	for _, o := range f.Operands {
		if o.Timestamp() {
			return true
		}
	}
	return false
}

// SortKey is one entry of sort=.
type SortKey struct {
	Name       string // bare name: "hitcount", or a key/value field name
	Descending bool
	Off, End   int
}

// HistSpec is a parsed hist trigger: the part after "hist:" in the
// kernel's syntax, or the same built from gtrace's flags.
type HistSpec struct {
	Src        string      // the source text the offsets refer to
	Name       string      // name=, "" if none
	NameOff    int         // offset of the name= value in Src
	Keys       []HistField // 1..3 keys
	Vals       []HistField // explicit values other than plain hitcount, in order (0..2)
	Sort       []SortKey   // 0..2; empty means hitcount ascending
	Size       int         // as given (0 = not given); see EffectiveSize
	Clock      string      // clock=, "" if none (see EffectiveClock)
	ClockOff   int         // the clock= attribute in Src, for errors about it
	ClockEnd   int
	Pause      bool // pause
	PauseOff   int  // the pause or cont attribute in Src, for errors about it
	PauseEnd   int
	Cont       bool   // cont / continue
	NoHitcount bool   // nohitcount / NOHC
	Filter     Expr   // the if-filter, nil if none
	FilterText string // the filter text as typed (after "if ")
	FilterOff  int    // offset of FilterText in Src

	srcName string    // what Src is called in errors
	segs    []histSeg // HistFromFlags: where each flag's text sits in Src
}

// Errorf returns an error for Src[off:end], placed on the flag the bytes
// came from when the spec was built from flags.
func (s *HistSpec) Errorf(off, end int, format string, args ...any) *Error {
	return locate(s.segs, Errorf(s.srcName, s.Src, off, end, format, args...))
}

// SrcName is what Src is called in errors: "hist", or "-R" for the hist
// of a trigger.
func (s *HistSpec) SrcName() string { return s.srcName }

// Locate places an *Error on Src (from a later check, such as binding the
// filter) on the flag its bytes came from; other errors pass unchanged.
func (s *HistSpec) Locate(err error) error {
	var e *Error
	if errors.As(err, &e) && e.Src == s.Src {
		return locate(s.segs, e)
	}
	return err
}
