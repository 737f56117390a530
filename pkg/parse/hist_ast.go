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
	// Ref, when not nil, makes the field a reference to a variable;
	// Name is then its text, $var or sys.event.$var.
	Ref *HistRef
}

// HasRef reports whether f is or uses a variable reference.
func (f HistField) HasRef() bool {
	if f.Ref != nil {
		return true
	}
	for _, o := range f.Operands {
		if o.HasRef() {
			return true
		}
	}
	return false
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
	Cont       bool         // cont / continue
	NoHitcount bool         // nohitcount / NOHC
	Vars       []HistVar    // variables, in the order defined
	Actions    []HistAction // handler actions, in the order given
	Filter     Expr         // the if-filter, nil if none
	FilterText string       // the filter text as typed (after "if ")
	FilterOff  int          // offset of FilterText in Src

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

// HistRef is a variable reference: $var, or sys.event.$var for the
// variable of the hist on another event (grammar §4.4).
type HistRef struct {
	System, Event string // "" unless fully qualified
	Var           string // the name after '$'
}

// String returns the reference as the kernel prints it: $var or
// sys.event.$var.
func (r HistRef) String() string {
	if r.System != "" {
		return r.System + "." + r.Event + ".$" + r.Var
	}
	return "$" + r.Var
}

// HistVar is a variable of a hist: name=expr (grammar §4.4). Each entry
// of the hist holds its value, set by the events that update the entry;
// other hists read it through a HistRef with the same key values.
type HistVar struct {
	Name     string
	Off, End int // the whole name=expr in Src
	Expr     HistField
}

// HistHandler is what runs a hist action: onmatch, onmax or onchange.
type HistHandler int

// The handlers of hist actions (grammar §4.5).
const (
	OnMatch  HistHandler = iota // onmatch(sys.event)
	OnMax                       // onmax($var)
	OnChange                    // onchange($var)
)

var histHandlerNames = [...]string{"onmatch", "onmax", "onchange"}

func (h HistHandler) String() string { return histHandlerNames[h] }

// HistActionKind is what an action does.
type HistActionKind int

// The kinds of hist actions (grammar §4.5).
const (
	ActTrace    HistActionKind = iota // trace(synth,...) or synth(...): emit a synthetic event
	ActSave                           // save(field,...)
	ActSnapshot                       // snapshot()
)

// HistParam is a parameter of an action: a variable reference, a field
// of the event, or the field of another event (sys.event.field, which
// the kernel makes a field variable of).
type HistParam struct {
	Text          string // as the kernel prints it
	Off, End      int
	System, Event string   // "" unless qualified
	Field         string   // a field name; "" for a variable
	Ref           *HistRef // a variable reference; nil for a field
}

// HistAction is one handler.action of a hist (grammar §4.5).
type HistAction struct {
	Handler HistHandler
	Off     int // the whole action in Src
	End     int
	// OnMatch: the event whose hist set the variables the action reads.
	System, Event string
	// OnMax and OnChange: the variable watched.
	Var    string
	VarOff int
	Kind   HistActionKind
	// ActTrace: the synthetic event, and whether it was written with the
	// trace keyword, trace(synth,...), rather than synth(...).
	Synth    string
	SynthOff int
	TraceKw  bool
	Params   []HistParam // ActTrace: the synthetic event's fields; ActSave: the fields saved
}

// String returns the action as the kernel prints it in the trigger
// description (grammar §6.2).
func (a HistAction) String() string {
	var b []byte
	b = append(b, a.Handler.String()...)
	b = append(b, '(')
	if a.Handler == OnMatch {
		b = append(b, a.System+"."+a.Event...)
	} else {
		b = append(b, "$"+a.Var...)
	}
	b = append(b, ")."...)
	var params []string
	switch a.Kind {
	case ActSave:
		b = append(b, "save"...)
	case ActSnapshot:
		b = append(b, "snapshot"...)
	case ActTrace:
		if a.TraceKw {
			b = append(b, "trace"...)
			params = append(params, a.Synth)
		} else {
			b = append(b, a.Synth...)
		}
	}
	for _, p := range a.Params {
		params = append(params, p.Text)
	}
	b = append(b, '(')
	for i, p := range params {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return string(append(b, ')'))
}
