package parse

import (
	"errors"
	"fmt"
	"strings"
)

// fieldType is the field's type as the format file writes it: the
// prototype's type name ("x64", "symbol", "unsigned int"), a string's
// "__data_loc char[]", an array's "TYPE[N]".
func (f *FuncField) fieldType() string {
	if f.Type.Name == "string" {
		return "__data_loc char[]"
	}
	return f.typeText()
}

// isText reports whether the field prints as text: a string, or an array
// of char (a static string).
func (f *FuncField) isText() bool {
	return f.Type.Name == "string" || f.Type.Name == "char" && f.Array > 0
}

// conv is the field's print conversion, as the prototype's make_fmt: %pS
// for a symbol, %s for a string or char array, %c for a char, else
// %d/%u (x types %x), with ll for 8 bytes.
func (f *FuncField) conv() string {
	switch {
	case f.Type.Name == "symbol":
		return "%pS"
	case f.isText():
		return "%s"
	case f.Type.Name == "char":
		return "%c"
	}
	s := "%"
	if f.Type.Size == 8 {
		s += "ll"
	}
	switch {
	case f.Type.Name[0] == 'x':
		return s + "x"
	case f.Type.Signed:
		return s + "d"
	}
	return s + "u"
}

// FormatFile returns the text of the event's format file: the common
// fields, __parent_ip (the caller's address) and __ip (the function's),
// then the fields, each aligned to its type's size, and the print fmt.
// id is the event's ID. The prototype named the two addresses the other
// way round; gtrace names them by what they hold.
func (e *FuncEvent) FormatFile(id int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: %d\nformat:\n", e.Func, id)
	b.WriteString("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")
	fmt.Fprintf(&b, "\tfield:unsigned long __parent_ip;\toffset:%d;\tsize:8;\tsigned:0;\n", CommonSize)
	fmt.Fprintf(&b, "\tfield:unsigned long __ip;\toffset:%d;\tsize:8;\tsigned:0;\n", CommonSize+8)
	for _, f := range e.Fields {
		t := f.fieldType()
		decl := t + " " + f.Name
		if i := strings.IndexByte(t, '['); i >= 0 && f.Type.Name != "string" {
			decl = t[:i] + " " + f.Name + t[i:]
		}
		sign := 0
		if f.Type.Signed {
			sign = 1
		}
		fmt.Fprintf(&b, "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", decl, f.RecOff, f.Type.Size*max(f.Array, 1), sign)
	}
	b.WriteString("\nprint fmt: " + e.PrintFmt() + "\n")
	return b.String()
}

// PrintFmt returns the event's print fmt, as the prototype wrote it:
// "%pS->%pS(NAME=CONV, ...)", the caller and the function, then the
// fields (an array's values joined by ',', a string by __get_str).
func (e *FuncEvent) PrintFmt() string {
	var b strings.Builder
	b.WriteString(`"%pS->%pS(`)
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name + "=")
		if f.Array > 0 && !f.isText() {
			for j := 0; j < f.Array; j++ {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(f.conv())
			}
			continue
		}
		b.WriteString(f.conv())
	}
	b.WriteString(`)", REC->__parent_ip, REC->__ip`)
	for _, f := range e.Fields {
		switch {
		case f.Type.Name == "string":
			b.WriteString(", __get_str(" + f.Name + ")")
		case f.Array > 0 && !f.isText():
			for j := 0; j < f.Array; j++ {
				fmt.Fprintf(&b, ", REC->%s[%d]", f.Name, j)
			}
		default:
			b.WriteString(", REC->" + f.Name)
		}
	}
	return b.String()
}

// Format returns the event's format, as ParseFormat reads FormatFile(id),
// in system functions.
func (e *FuncEvent) Format(id int) *Format {
	f, err := ParseFormat(e.Func, e.FormatFile(id))
	if err != nil {
		panic(fmt.Sprintf("function event %s: derived format does not parse: %v", e.FullName(), err))
	}
	f.System = FuncEventSystem
	return f
}

// probeType is the probe type that reads the field's values as the
// function event does.
func (f *FuncField) probeType() string {
	var t string
	switch f.Type.Name {
	case "char":
		t = "char"
	case "short", "int", "long":
		sign := "s"
		if f.Unsigned {
			sign = "u"
		}
		t = fmt.Sprintf("%s%d", sign, f.Type.Size*8)
	case "size_t":
		t = "u64"
	default:
		t = f.Type.Name
	}
	if f.Array > 0 {
		t += fmt.Sprintf("[%d]", f.Array)
	}
	return t
}

// fetch returns the field's probe fetch argument: its register (or
// address) with a dereference for each [N]; an array is read where the
// chain reaches (at the last [N], else at the value plus the offsets), a
// string at the pointer the chain gives. A chain that adds an offset to a value it does not read has
// no fetch argument: that is an error with the caret on the offset.
func (e *FuncEvent) fetch(name string, f FuncField) (string, error) {
	if f.Slot < 0 {
		return fmt.Sprintf("@0x%x", f.Addr), nil
	}
	reg, _ := probeArgReg(e.arch, f.Slot+1)
	x := reg
	var pending uint64
	var last FuncStep
	for _, s := range f.Steps {
		pending += s.Plus
		last = s
		if s.Deref {
			pending += s.Index * uint64(f.Type.Size)
			x = fmt.Sprintf("+%d(%s)", pending, x)
			pending = 0
		}
	}
	switch {
	case f.Type.Name == "string":
		return fmt.Sprintf("+%d(%s)", pending, x), nil
	case f.Array > 0 && last.Deref:
		return x, nil
	case f.Array > 0:
		return fmt.Sprintf("+%d(%s)", pending, x), nil
	}
	if pending != 0 {
		return "", Errorf(name, e.Src, last.Off, last.End, "no probe reads a value plus an offset").
			WithHint("a probe's fetch argument reads memory at an offset: end the chain with [N] to read there")
	}
	return x, nil
}

// Probe returns the probe definition that reads what the function event
// reads, at the function's entry: a kprobe p:functions/FUNC FUNC, or a
// uprobe p:functions/FUNC PATH:0xOFFSET (Resolve first), each field an
// argument NAME=FETCHARG:TYPE. A field that no probe argument reads is an
// error with the caret on it; name names the input.
func (e *FuncEvent) Probe(name string) (*ProbeDef, error) {
	var b strings.Builder
	b.WriteString("p:" + FuncEventSystem + "/" + e.Func + " ")
	if e.User() {
		fmt.Fprintf(&b, "%s:0x%x", e.Path, e.FileOffset)
	} else {
		b.WriteString(e.Func)
	}
	at := make([]int, len(e.Fields))
	for i, f := range e.Fields {
		x, err := e.fetch(name, f)
		if err != nil {
			return nil, err
		}
		at[i] = b.Len() + 1
		fmt.Fprintf(&b, " %s=%s:%s", f.Name, x, f.probeType())
	}
	src := b.String()
	d, err := ParseProbe(name, src, ProbeOptions{Arch: e.arch})
	if err == nil {
		return d, nil
	}
	var pe *Error
	if !errors.As(err, &pe) {
		return nil, err
	}
	kind := "kprobe"
	if e.User() {
		kind = "uprobe"
	}
	for i := len(at) - 1; i >= 0; i-- {
		if pe.Off >= at[i] {
			f := e.Fields[i]
			return nil, Errorf(name, e.Src, f.Off, f.End, "no %s reads this field: %s", kind, pe.Msg).WithHint("%s", pe.Hint)
		}
	}
	return nil, e.PlaceError(name, false, "no %s at this function: %s", kind, pe.Msg).WithHint("%s", pe.Hint)
}
