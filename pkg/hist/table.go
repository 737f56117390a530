package hist

import (
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
)

// KeyKind says how a key's value is held.
type KeyKind int

// Key kinds.
const (
	KeyNumber KeyKind = iota // a u64 (after any log2/buckets transform)
	KeyString                // text (char arrays, __data_loc strings, comm)
	KeyStack                 // a kernel stack (common_stacktrace), as a *Stack
)

// Key is one resolved hist key.
type Key struct {
	Spec   parse.HistField // as parsed: name, modifier, buckets
	Kind   KeyKind
	Signed bool // the source field or expression is signed: its numbers print signed
	User   bool // KeyStack: the user stack (ustacktrace), not the kernel's
	// Frames: a KeyStack whose key bytes are the stack's frames
	// (bpfgen.FramesSize), not its id in a stack map: a synthetic
	// event's stack field (NAME.stacktrace), a live session's
	// common_stacktrace.
	Frames bool
	Expr   *bpfgen.Expr // common_timestamp or an expression: how the number is computed
}

// Val is one resolved explicit value (hitcount is implicit and always
// counted; see Plan.HitcountMod).
type Val struct {
	Spec   parse.HistField
	Signed bool         // the field or expression is signed: its sums print signed
	Expr   *bpfgen.Expr // common_timestamp or an expression: how the number is computed
}

// Plan is a hist spec resolved against an event's format.
type Plan struct {
	Event       string // "system:event"
	Spec        *parse.HistSpec
	Keys        []Key
	Vals        []Val         // explicit values other than hitcount, in spec order
	HitcountMod parse.HistMod // ModPercent or ModGraph when vals= lists hitcount.percent/.graph, else ModNone
	Size        int           // effective table size (a power of two)
	// Layout places the keys and values in the bytes of a table entry,
	// as the BPF program and the file engine fill them; nil for plans
	// made by hand (tests).
	Layout *bpfgen.HistLayout
}

// KeyValue is the value of one key in an entry.
type KeyValue struct {
	Num uint64 // KeyNumber (for log2 keys the exponent, for buckets the bucket start)
	Str string // KeyString
	// Stack is a KeyStack's frames (Num is its id in the stack map);
	// entries with the same stack share it.
	Stack *Stack
}

// Entry is one row of a hist table.
type Entry struct {
	Keys     []KeyValue // one per Plan.Keys
	Comm     string     // task name saved when the entry was created (for .execname keys)
	Hitcount uint64
	Vals     []uint64 // one per Plan.Vals
	// Actions are the entry's onmax and onchange actions but snapshot(),
	// in the order of the spec: what the kernel appends to the entry
	// line (grammar §6.4).
	Actions []EntryAction
}

// EntryAction is what an onmax or onchange action keeps in an entry.
type EntryAction struct {
	Handler parse.HistHandler // parse.OnMax or parse.OnChange
	Value   uint64            // the max, or the last value that changed
	// Saved are the hist's save() fields, as the event that last fired
	// the save action had them.
	Saved []SavedField
}

// SavedField is one save() field of an entry.
type SavedField struct {
	Name string
	Str  bool   // a string field: Text, else Num
	Set  bool   // the save action has fired for the entry
	Num  uint64 // number
	Text string // string
}

// Snapshot is what a snapshot() action remembers of the event that took
// the last snapshot (grammar §6.6).
type Snapshot struct {
	Handler string // the handler as the kernel prints it: "onmax($wakeup_lat)"
	Value   uint64 // the triggering value
	Keys    []KeyValue
	Comm    string // the entry's saved task name, for .execname keys
}

// Table is the contents of a hist: its entries and counters.
type Table struct {
	Plan    *Plan
	Entries []Entry
	Dropped uint64 // events whose new key found the table full
	Lost    uint64 // events that could not be counted for another reason
	// DroppedVals are, per Plan.Vals, the sums of the values of the
	// dropped events, which a sum's .percent counts in its total; nil
	// when the plan keeps none (no sum is .percent).
	DroppedVals []uint64
	// Snapshot is set when a snapshot() action of the hist has fired.
	Snapshot *Snapshot
}

// Hits returns the sum of the entries' hitcounts: the kernel's "Hits:".
func (t *Table) Hits() uint64 {
	var n uint64
	for i := range t.Entries {
		n += t.Entries[i].Hitcount
	}
	return n
}
