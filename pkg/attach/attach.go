package attach

import "fmt"

// Kind is the kind of an attach point.
type Kind int

// Kinds of attach points.
const (
	Tracepoint    Kind = iota // a classic tracepoint: the program reads the event's record
	RawTracepoint             // a raw tracepoint: the program reads the tracepoint's arguments
	TpBTF                     // a BTF-enabled raw tracepoint (tp_btf): arguments, and direct loads through them
	Uprobe                    // an instruction of a user-space binary
	Uretprobe                 // the return of a user-space function
	Kprobe                    // a kernel function's entry (or an instruction in it)
	Kretprobe                 // a kernel function's return
	Fentry                    // a kernel function's entry, through BTF
	Fexit                     // a kernel function's return, through BTF
)

var kindNames = [...]string{"tracepoint", "raw_tracepoint", "tp_btf", "uprobe", "uretprobe", "kprobe", "kretprobe", "fentry", "fexit"}

// String returns the kind's name as bpftool and libbpf's section names
// spell it.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Point is one place to attach a program.
type Point struct {
	Kind Kind
	// System and Event name a classic tracepoint (Tracepoint).
	System, Event string
	// Target is the raw tracepoint's name (RawTracepoint, TpBTF), the
	// kernel function (Kprobe, Kretprobe, Fentry, Fexit) or the path of
	// the binary (Uprobe, Uretprobe).
	Target string
	// Symbol and Offset place a uprobe or kprobe: a symbol of Target (or
	// of the kernel) and an offset from it; with no symbol, Offset is
	// the file offset of the instruction (uprobes).
	Symbol string
	Offset uint64
	// Cookie is the value bpf_get_attach_cookie returns to the program
	// at this point: it tells apart the events of a program attached at
	// several points.
	Cookie uint64
}

// TracepointAt returns the point of the classic tracepoint system:event.
func TracepointAt(system, event string) Point {
	return Point{Kind: Tracepoint, System: system, Event: event}
}

// String describes the point as a user reads it: "tracepoint sched:sched_switch",
// "tp_btf sys_enter", "uprobe /bin/bash:readline+0x10".
func (p Point) String() string {
	s := p.Kind.String() + " "
	switch p.Kind {
	case Tracepoint:
		s += p.System + ":" + p.Event
	case Uprobe, Uretprobe:
		s += p.Target
		if p.Symbol != "" {
			s += ":" + p.Symbol
		}
		if p.Offset != 0 || p.Symbol == "" {
			s += fmt.Sprintf("+%#x", p.Offset)
		}
	case Kprobe, Kretprobe:
		s += p.Target
		if p.Offset != 0 {
			s += fmt.Sprintf("+%#x", p.Offset)
		}
	default:
		s += p.Target
	}
	if p.Cookie != 0 {
		s += fmt.Sprintf(" (cookie %d)", p.Cookie)
	}
	return s
}
