package parse

import (
	"fmt"
	"sort"
	"strings"
)

// String returns the definition as the kernel lists it in kprobe_events
// or uprobe_events: p or r (with maxactive), :GROUP/EVENT, the place
// (SYMBOL[+OFFSET] in decimal, an address as 0x and 16 hex digits where
// the kernel writes a hashed pointer, PATH:0x and 16 hex digits for a
// uprobe, then (0xREFCTR) if set), and each argument as NAME=TEXT. A
// uprobe at PATH:SYMBOL lists the symbol until Resolve gives its offset.
// A removal is -:GROUP/EVENT.
func (d *ProbeDef) String() string {
	var b strings.Builder
	if d.Remove {
		b.WriteString("-:")
		if d.GroupOff >= 0 {
			b.WriteString(d.Group + "/")
		}
		b.WriteString(d.Event)
		return b.String()
	}
	b.WriteString(d.head())
	switch {
	case d.User && d.Resolved:
		fmt.Fprintf(&b, " %s:0x%016x", d.Path, d.FileOffset)
	case d.User:
		fmt.Fprintf(&b, " %s:%s", d.Path, d.PathSymbol)
		if d.SymbolOffset != 0 {
			fmt.Fprintf(&b, "+%d", d.SymbolOffset)
		}
	case d.IsAddr:
		fmt.Fprintf(&b, " 0x%016x", d.Addr)
	case d.Offset != 0:
		fmt.Fprintf(&b, " %s+%d", d.Symbol, d.Offset)
	default:
		b.WriteString(" " + d.Symbol)
	}
	if d.User && d.RefCtr != 0 {
		fmt.Fprintf(&b, "(0x%x)", d.RefCtr)
	}
	for _, a := range d.Args {
		b.WriteString(" " + a.Name + "=" + a.Comm)
	}
	return b.String()
}

// head is p or r[MAXACTIVE], then :GROUP/EVENT.
func (d *ProbeDef) head() string {
	c := "p"
	if d.Return {
		c = "r"
		if d.MaxActive > 0 && !d.User {
			c += fmt.Sprint(d.MaxActive)
		}
	}
	return c + ":" + d.Group + "/" + d.Event
}

// Kernel returns the definition as the kernel takes it, for a probe that
// gtrace's extensions leave as the kernel's: the group and event named,
// a uprobe's place as its file offset (Resolve first), and $argN on a
// uprobe written as the register or stack word it reads. A removal is
// -:GROUP/EVENT.
func (d *ProbeDef) Kernel() string {
	if d.Remove {
		return "-:" + d.Group + "/" + d.Event
	}
	var b strings.Builder
	b.WriteString(d.head())
	switch {
	case d.User:
		fmt.Fprintf(&b, " %s:0x%x", d.Path, d.FileOffset)
		if d.RefCtr != 0 {
			fmt.Fprintf(&b, "(0x%x)", d.RefCtr)
		}
	case d.IsAddr:
		fmt.Fprintf(&b, " 0x%x", d.Addr)
	case d.Offset != 0:
		fmt.Fprintf(&b, " %s+%d", d.Symbol, d.Offset)
	default:
		b.WriteString(" " + d.Symbol)
	}
	for _, a := range d.Args {
		b.WriteString(" " + a.Name + "=" + d.kernelComm(a))
	}
	return b.String()
}

// kernelComm is an argument's text with each $argN of a uprobe replaced
// by the register or stack word it reads.
func (d *ProbeDef) kernelComm(a ProbeArg) string {
	if !d.User {
		return a.Comm
	}
	var args []*Fetch
	for f := a.Fetch; f != nil; f = f.Inner {
		if f.Op == FetchArg {
			args = append(args, f)
		}
	}
	sort.Slice(args, func(i, j int) bool { return args[i].Off > args[j].Off })
	s := a.Comm
	for _, f := range args {
		reg, _ := probeArgReg(d.arch, int(f.N))
		s = s[:f.Off-a.BodyOff] + reg + s[f.End-a.BodyOff:]
	}
	return s
}

// ArgRegister returns the register or stack word ("%di", "$stack1") that
// $argN reads on a uprobe at a function's entry on the definition's
// architecture.
func (d *ProbeDef) ArgRegister(n int) (string, bool) { return probeArgReg(d.arch, n) }

// probeFields returns the probe's own fields ahead of its arguments.
func (d *ProbeDef) probeFields() []string {
	if d.Return {
		return []string{"__probe_func", "__probe_ret_ip"}
	}
	return []string{"__probe_ip"}
}

// FormatFile returns the text of the event's format file as the kernel
// writes it: the common fields, __probe_ip (or __probe_func and
// __probe_ret_ip for a return probe), then the arguments packed one after
// the other without alignment, strings as __data_loc char[], arrays as
// TYPE NAME[] (an array of strings __data_loc char[][N]), and the print
// fmt. id is the event's ID.
func (d *ProbeDef) FormatFile(id int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: %d\nformat:\n", d.Event, id)
	b.WriteString("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")
	off := CommonSize
	for _, n := range d.probeFields() {
		fmt.Fprintf(&b, "\tfield:unsigned long %s;\toffset:%d;\tsize:8;\tsigned:0;\n", n, off)
		off += 8
	}
	for _, a := range d.Args {
		t := a.Type
		size := t.Size * max(a.Count, 1)
		sign := 0
		if t.Signed {
			sign = 1
		}
		decl := t.FieldType + " " + a.Name
		switch {
		case a.Count > 0 && t.String:
			decl = fmt.Sprintf("%s[%d] %s", t.FieldType, a.Count, a.Name)
		case a.Count > 0:
			decl = t.FieldType + " " + a.Name + "[]"
		}
		fmt.Fprintf(&b, "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", decl, off, size, sign)
		off += size
	}
	b.WriteString("\nprint fmt: " + d.PrintFmt() + "\n")
	return b.String()
}

// PrintFmt returns the event's print fmt, as the kernel's
// traceprobe_set_print_fmt writes it.
func (d *ProbeDef) PrintFmt() string {
	var b strings.Builder
	if d.Return {
		b.WriteString(`"(%lx <- %lx)`)
	} else {
		b.WriteString(`"(%lx)`)
	}
	for _, a := range d.Args {
		b.WriteString(" " + a.Name + "=")
		if a.Count == 0 {
			b.WriteString(a.Type.Fmt)
			continue
		}
		for j := 0; j < a.Count; j++ {
			if j == 0 {
				b.WriteByte('{')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(a.Type.Fmt)
		}
		b.WriteByte('}')
	}
	b.WriteByte('"')
	for _, n := range d.probeFields() {
		b.WriteString(", REC->" + n)
	}
	for _, a := range d.Args {
		switch {
		case a.Count > 0:
			for j := 0; j < a.Count; j++ {
				if a.Type.String {
					fmt.Fprintf(&b, ", __get_str(%s[%d])", a.Name, j)
				} else {
					fmt.Fprintf(&b, ", REC->%s[%d]", a.Name, j)
				}
			}
		case a.Type.String:
			b.WriteString(", __get_str(" + a.Name + ")")
		default:
			b.WriteString(", REC->" + a.Name)
		}
	}
	return b.String()
}

// Format returns the event's format, as ParseFormat reads FormatFile(id),
// with System the probe's group.
func (d *ProbeDef) Format(id int) *Format {
	f, err := ParseFormat(d.Event, d.FormatFile(id))
	if err != nil {
		panic(fmt.Sprintf("probe event %s: derived format does not parse: %v", d.FullName(), err))
	}
	f.System = d.Group
	return f
}

// SameArgs reports whether d's arguments have the names and types of
// e's, as the kernel requires of two probes of one event; if not, the
// index of the first argument that differs (len of the shorter when one
// has more).
func (d *ProbeDef) SameArgs(e *ProbeDef) (int, bool) {
	n := min(len(d.Args), len(e.Args))
	for i := 0; i < n; i++ {
		a, b := d.Args[i], e.Args[i]
		if a.Name != b.Name || a.Type.FieldType != b.Type.FieldType || a.Type.Fmt != b.Type.Fmt || a.Count != b.Count {
			return i, false
		}
	}
	if len(d.Args) != len(e.Args) {
		return n, false
	}
	return 0, true
}

// AppendError returns the kernel's error for a definition d whose event
// is that of an earlier probe e (the kernel appends d to the event only
// if both are of one kind, with the same arguments, at another place).
// name names the input; nil means d joins e's event.
func (d *ProbeDef) AppendError(name string, e *ProbeDef) *Error {
	switch {
	case d.User != e.User:
		return d.nameErr(name, probeEventExist).WithHint("%s is a %s event: give this probe another name", e.FullName(), e.kindName())
	case d.Return != e.Return:
		return d.nameErr(name, probeDiffProbeType).WithHint("a probe joins an event of its own kind: %s is a %s", e.FullName(), e.kindWord())
	}
	if i, ok := d.SameArgs(e); !ok {
		if i < len(d.Args) {
			a := d.Args[i]
			return Errorf(name, d.Src, a.Off, a.End, "%s", probeDiffArgType).WithHint("a probe joins an event with the same argument names and types: %s", e.String())
		}
		return Errorf(name, d.Src, len(d.Src), len(d.Src), "%s", probeDiffArgType).WithHint("a probe joins an event with the same argument names and types: %s", e.String())
	}
	if d.samePlace(e) {
		return d.nameErr(name, probeSameProbe).WithHint("the same probe is defined twice")
	}
	return nil
}

func (d *ProbeDef) kindWord() string {
	if d.Return {
		return "return probe"
	}
	return "probe"
}

// samePlace reports whether d and e probe the same place with the same
// argument expressions.
func (d *ProbeDef) samePlace(e *ProbeDef) bool {
	if d.Symbol != e.Symbol || d.Offset != e.Offset || d.IsAddr != e.IsAddr || d.Addr != e.Addr ||
		d.Path != e.Path || d.FileOffset != e.FileOffset || d.PathSymbol != e.PathSymbol || d.SymbolOffset != e.SymbolOffset {
		return false
	}
	for i := range d.Args {
		if d.Args[i].Comm != e.Args[i].Comm {
			return false
		}
	}
	return true
}

// nameErr is an error with the caret on the event's name, or on the
// command when the name is the default.
func (d *ProbeDef) nameErr(name, msg string) *Error {
	if d.EventOff >= 0 {
		off := d.EventOff
		if d.GroupOff >= 0 {
			off = d.GroupOff
		}
		return Errorf(name, d.Src, off, d.EventOff+len(d.Event), "%s", msg)
	}
	return Errorf(name, d.Src, d.PlaceOff, d.PlaceEnd, "%s", msg)
}

// ExistsError returns the kernel's error for a definition whose event is
// one that is not a probe; name names the input.
func (d *ProbeDef) ExistsError(name string) *Error {
	return d.nameErr(name, probeEventExist).WithHint("%s is an event already: give the probe another name", d.FullName())
}

// NoEventError returns the error for a removal of an event that no
// probe defined; name names the input.
func (d *ProbeDef) NoEventError(name string) *Error {
	ev := d.Event
	if d.GroupOff >= 0 {
		ev = d.Group + "/" + ev
	}
	return Errorf(name, d.Src, 0, len(d.Src), "no probe event %s to remove", ev).
		WithHint("a removal takes away a probe defined before it")
}

// PlaceError returns an error with the caret on the probe's place: its
// path for a uprobe (when path), else the whole place; name names the
// input.
func (d *ProbeDef) PlaceError(name string, path bool, format string, args ...any) *Error {
	end := d.PlaceEnd
	if path && d.User {
		end = d.PlaceOff + len(d.Path)
	}
	return Errorf(name, d.Src, d.PlaceOff, end, format, args...)
}

// Resolve sets a uprobe's file offset, for a place at PATH:SYMBOL: off is
// the file offset of the symbol, SymbolOffset added by Resolve.
func (d *ProbeDef) Resolve(off uint64) {
	d.FileOffset, d.Resolved = off+d.SymbolOffset, true
}
