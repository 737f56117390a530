package parse

// TriggerCmd is the command of an event trigger (grammar §3.1).
type TriggerCmd int

// Trigger commands, as the kernel names them.
const (
	TrigTraceOn      TriggerCmd = iota // traceon
	TrigTraceOff                       // traceoff
	TrigSnapshot                       // snapshot
	TrigStacktrace                     // stacktrace
	TrigEnableEvent                    // enable_event
	TrigDisableEvent                   // disable_event
	TrigEnableHist                     // enable_hist
	TrigDisableHist                    // disable_hist
	TrigHist                           // hist
)

// triggerCmdNames are the command words in the kernel's order of the
// trigger file's "# Available triggers:" line.
var triggerCmdNames = [...]string{"traceon", "traceoff", "snapshot", "stacktrace",
	"enable_event", "disable_event", "enable_hist", "disable_hist", "hist"}

func (c TriggerCmd) String() string { return triggerCmdNames[c] }

// HasTarget reports whether the command names a target event
// (CMD:SYS:EVENT): enable_event, disable_event, enable_hist, disable_hist.
func (c TriggerCmd) HasTarget() bool {
	return c >= TrigEnableEvent && c <= TrigDisableHist
}

// CountsStateChanges reports whether a count on the command is spent only
// by firings that change a state, as the kernel does (grammar §3.2,
// §12.23), rather than by every firing:
//
//   - traceon: a firing (filter matched, count left) while tracing is on
//     does nothing and keeps its count; one while tracing is off turns it
//     on and spends one. traceoff the same the other way round.
//   - enable_event: a firing while the target event is already recording
//     does nothing and keeps its count; one while the target is soft
//     disabled enables it and spends one. disable_event the same the other
//     way round.
//
// Every other command spends one count on every firing, whatever the state:
// stacktrace and snapshot, and also enable_hist and disable_hist (the
// kernel's hist_enable_count_trigger does not look at the hists' state,
// although grammar §3.2's table says it does).
func (c TriggerCmd) CountsStateChanges() bool {
	switch c {
	case TrigTraceOn, TrigTraceOff, TrigEnableEvent, TrigDisableEvent:
		return true
	}
	return false
}

// Trigger is one parsed trigger, "[!]COMMAND[:SYS:EVENT][:N][ if FILTER]"
// or "[!]hist:...". Every offset is a byte offset into Src.
//
// Count semantics, for the runtime: with HasCount false the trigger is
// unlimited; with HasCount true it fires at most Count more times and
// Count 0 never fires. What spends a count is CountsStateChanges. A
// firing is a hit of the event (the one whose trigger file holds the
// trigger) whose Filter, if any, matches the event's record. The effects
// take place after the firing event is recorded, so a traceoff's own
// event is still in the trace (grammar §3.2).
type Trigger struct {
	Src    string // the trigger as written
	Name   string // what Src is called in errors, e.g. "-R"
	Remove bool   // written with a leading '!': a removal (TriggerSet.Apply)
	Off    int    // offset of the '!' of a removal, else of the command word

	Cmd            TriggerCmd
	CmdOff, CmdEnd int // the command word

	// Target is the event that enable_event, disable_event, enable_hist
	// and disable_hist act on; zero for the other commands.
	Target TriggerTarget

	HasCount           bool   // a ":N" was given; without it, unlimited
	Count              uint64 // the count (0..2^64-1; 0 never fires)
	CountOff, CountEnd int    // the count's digits, when HasCount

	// Hist is the spec of a hist command, parsed by ParseHist from Src
	// with every byte before the command word (blanks and the '!')
	// turned into a blank, so that its offsets are those of Src; nil
	// for the other commands. A hist has no count.
	Hist *HistSpec

	Filter     Expr   // the filter after " if ", nil if none; for hist the spec's own
	FilterText string // the filter text as typed (after "if" and one blank)
	FilterOff  int    // offset of FilterText in Src
}

// TriggerTarget is the SYS:EVENT of an enable/disable trigger.
type TriggerTarget struct {
	System, Event string
	Off, End      int // from the first byte of System to the last of Event
}

// Errorf returns an *Error for Src[off:end].
func (t *Trigger) Errorf(off, end int, format string, args ...any) *Error {
	return Errorf(t.Name, t.Src, off, end, format, args...)
}
