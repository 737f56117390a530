package parse

import (
	"fmt"
	"strconv"
	"strings"
)

// The kernel's words for a bad synthetic event definition (the
// synthetic_events error log), which gtrace's errors keep.
const (
	synthBadName      = "Illegal name"
	synthInvalidCmd   = "Command must be of the form: <name> field[;field] ..."
	synthInvalidDyn   = "Command must be of the form: s or -:[synthetic/]<name> field[;field] ..."
	synthExists       = "Event already exists"
	synthTooMany      = "Too many fields"
	synthIncomplete   = "Incomplete type"
	synthInvalidType  = "Invalid type"
	synthInvalidField = "Invalid field"
	synthInvalidArray = "Invalid array specification"
)

// SynthSystem is the system of every synthetic event.
const SynthSystem = "synthetic"

// SynthFieldsMax is the most fields a synthetic event has (the kernel's
// SYNTH_FIELDS_MAX).
const SynthFieldsMax = 64

// synthStrMax is the longest static string a synthetic event holds, and
// the bytes one takes in the record (the kernel's STR_VAR_LEN_MAX).
const synthStrMax = 256

const synthDefHint = "a definition is NAME TYPE FIELD[; TYPE FIELD]..., e.g. wakeup_latency u64 lat; pid_t pid"

// SynthKind says how a synthetic event field is held in the record.
type SynthKind int

// Synthetic field kinds.
const (
	SynthNumber    SynthKind = iota // an integer, in an 8-byte slot
	SynthString                     // char[N]: N bytes in a 256-byte slot
	SynthDynString                  // char[]: a __data_loc string
	SynthStack                      // long[] / unsigned long[]: a __data_loc stacktrace
)

// SynthField is one field of a synthetic event.
type SynthField struct {
	Type   string // as the kernel keeps it, array on the type: "u64", "unsigned int", "char[16]", "char[]", "unsigned long[]"
	Name   string
	Kind   SynthKind
	Size   int  // the field's size in the format: the integer's, N of char[N], 8 for __data_loc
	Signed bool // the kernel's rule: a type not starting with "u", other than gfp_t, or a __data_loc
	Off    int  // offset of the field's first word (its type) in the definition
	End    int  // offset just past its name
}

// SynthDef is a synthetic event definition, as written to the kernel's
// synthetic_events file (or dynamic_events, with "s:").
type SynthDef struct {
	Src     string
	Name    string
	NameOff int
	Fields  []SynthField
}

// synthWord is one blank-separated word of a definition.
type synthWord struct {
	s   string
	off int
}

// isSpace is the kernel's isspace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// synthWords splits src[from:to] at blanks, as the kernel's argv_split.
func synthWords(src string, from, to int) []synthWord {
	var ws []synthWord
	for i := from; i < to; {
		for i < to && isSpace(src[i]) {
			i++
		}
		j := i
		for j < to && !isSpace(src[j]) {
			j++
		}
		if j > i {
			ws = append(ws, synthWord{src[i:j], i})
		}
		i = j
	}
	return ws
}

// IsGoodName reports whether s is a name the kernel takes for an event or
// a field: a letter or '_', then letters, digits and '_'.
func IsGoodName(s string) bool {
	if s == "" || !(s[0] == '_' || isAlpha(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentByte(s[i]) {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

const synthNameHint = "a name is letters, digits and '_', and does not start with a digit"

// ParseSynth parses one synthetic event definition: what the kernel takes
// in synthetic_events (NAME FIELD[;FIELD]..., §7.1 of the grammar), or
// in dynamic_events ("s:[synthetic/]NAME FIELD[;FIELD]..."). It accepts
// what the kernel accepts and refuses the rest with the kernel's message,
// and the caret at the token that is wrong (the kernel's caret comes from
// strstr and lands on the first copy of the token), except that it also
// refuses two fields of one name, or a field named like a common field,
// which the kernel takes and cannot tell apart, and an array of a type
// other than char, unsigned char, long and unsigned long ("xchar[4]",
// which the kernel takes for a string). name names the input in
// errors.
func ParseSynth(name, src string) (*SynthDef, error) {
	errf := func(off, end int, msg string) *Error { return Errorf(name, src, off, end, "%s", msg) }
	i := 0
	for i < len(src) && isSpace(src[i]) {
		i++
	}
	if i == len(src) {
		return nil, errf(i, i, synthInvalidCmd).WithHint("%s", synthDefHint)
	}
	switch {
	case src[i] == '!' || strings.HasPrefix(src[i:], "-:"):
		return nil, errf(i, len(src), "a removal is not a definition").
			WithHint("gtrace defines synthetic events for its own session: give the definition, NAME TYPE FIELD[; TYPE FIELD]...")
	case strings.HasPrefix(src[i:], "s:"):
		i += 2
		sp := strings.IndexAny(src[i:], " \t")
		if sp < 0 {
			sp = len(src) - i
		}
		if slash := strings.IndexByte(src[i:i+sp], '/'); slash >= 0 {
			if src[i:i+slash] != SynthSystem {
				return nil, errf(i, i+slash, synthInvalidDyn).WithHint("the system of a synthetic event is %q", SynthSystem)
			}
			i += slash + 1
		}
	}
	// The part before the first ';' has the name and a whole field.
	semi := strings.IndexByte(src[i:], ';')
	if semi < 0 {
		semi = len(src)
	} else {
		semi += i
	}
	if first := synthWords(src, i, semi); len(first) < 3 {
		end := i
		if len(first) > 0 {
			last := first[len(first)-1]
			end = last.off + len(last.s)
		}
		return nil, errf(i, end, synthInvalidCmd).WithHint("%s", synthDefHint)
	}
	p := strings.IndexAny(src[i:], " \t")
	if p < 0 {
		// Words split by other blanks (a newline): the kernel ends a name
		// only at a space or tab.
		return nil, errf(i, len(src), synthInvalidCmd).WithHint("%s", synthDefHint)
	}
	d := &SynthDef{Src: src, Name: src[i : i+p], NameOff: i}
	if !IsGoodName(d.Name) {
		return nil, errf(i, i+p, synthBadName).WithHint("%s", synthNameHint)
	}
	seen := map[string]bool{}
	for start := i + p; start <= len(src); {
		stop := strings.IndexByte(src[start:], ';')
		if stop < 0 {
			stop = len(src)
		} else {
			stop += start
		}
		ws := synthWords(src, start, stop)
		for len(ws) > 0 {
			f, n, err := parseSynthField(name, src, ws)
			if err != nil {
				return nil, err
			}
			ws = ws[n:]
			if len(d.Fields) == SynthFieldsMax {
				return nil, errf(f.Off, f.End, synthTooMany).WithHint("a synthetic event has at most %d fields", SynthFieldsMax)
			}
			if seen[f.Name] || strings.HasPrefix(f.Name, "common_") {
				e := errf(f.End-len(f.Name), f.End, "duplicate field name "+strconv.Quote(f.Name))
				if !seen[f.Name] {
					e = errf(f.End-len(f.Name), f.End, "field name "+strconv.Quote(f.Name)+" is taken by the common fields of every event")
				}
				return nil, e.WithHint("the kernel takes it, but a filter, key or value could not tell the two fields apart: rename one")
			}
			seen[f.Name] = true
			d.Fields = append(d.Fields, f)
		}
		start = stop + 1
	}
	return d, nil
}

// synthTypes are the types the kernel knows by name, with their sizes.
var synthTypes = map[string]int{
	"s64": 8, "u64": 8, "s32": 4, "u32": 4, "s16": 2, "u16": 2, "s8": 1, "u8": 1,
	"char": 1, "unsigned char": 1, "int": 4, "unsigned int": 4,
	"long": 8, "unsigned long": 8, "bool": 1, "pid_t": 4, "gfp_t": 4,
}

// synthArrayBase are the types before an array's '['.
var synthArrayBase = map[string]bool{"char": true, "unsigned char": true, "long": true, "unsigned long": true}

// synthTypeNames lists synthTypes' names and the array forms, for hints.
var synthTypeNames = []string{
	"s64", "u64", "s32", "u32", "s16", "u16", "s8", "u8", "char", "unsigned char",
	"int", "unsigned int", "long", "unsigned long", "bool", "pid_t", "gfp_t",
}

// parseSynthField parses the field that starts at ws[0] and returns it
// with the number of words it took.
func parseSynthField(name, src string, ws []synthWord) (SynthField, int, error) {
	errf := func(off, end int, msg string) *Error { return Errorf(name, src, off, end, "%s", msg) }
	typ, prefix, n := ws[0], "", 2
	if typ.s == "unsigned" {
		if len(ws) < 3 {
			return SynthField{}, 0, errf(typ.off, typ.off+len(typ.s), synthIncomplete).
				WithHint("unsigned needs a type and then a name: unsigned int NAME, unsigned long NAME, unsigned char NAME")
		}
		prefix, typ, n = "unsigned ", ws[1], 3
	}
	if len(ws) < n {
		return SynthField{}, 0, errf(typ.off, typ.off+len(typ.s), synthInvalidField).
			WithHint("a field is a type and a name: TYPE NAME")
	}
	fw := ws[n-1]
	fname, array := fw.s, ""
	if b := strings.IndexByte(fw.s, '['); b >= 0 {
		fname, array = fw.s[:b], fw.s[b:]
	}
	f := SynthField{Name: fname, Off: ws[0].off, End: fw.off + len(fname)}
	if !IsGoodName(fname) {
		end := f.End
		if fname == "" {
			end = fw.off + len(fw.s)
		}
		return SynthField{}, 0, errf(fw.off, end, synthBadName).WithHint("%s", synthNameHint)
	}
	f.Type = prefix + typ.s + array
	size, ok := synthFieldSize(f.Type)
	if !ok || size == 0 && !strings.Contains(f.Type, "char[") && !strings.Contains(f.Type, "long[") {
		if array != "" && !ok {
			off := fw.off + len(fname)
			return SynthField{}, 0, errf(off, fw.off+len(fw.s), synthInvalidArray).
				WithHint("a string is char NAME[N], N from 1 to %d, or char NAME[] for one of any length; write the size once, on the type or on the name", synthStrMax)
		}
		e := errf(typ.off, typ.off+len(typ.s), synthInvalidType)
		switch {
		case strings.Contains(f.Type, "char["):
			e.WithHint("a string is char[N] NAME, N from 1 to %d, or char[] NAME for one of any length", synthStrMax)
		case strings.Contains(f.Type, "["):
			e.WithHint("only char (strings) and long or unsigned long (stacktraces, long[]) make arrays")
		default:
			if near := Nearest(prefix+typ.s, synthTypeNames); near != "" {
				e.WithHint("did you mean %q?", near)
			} else {
				e.WithHint("a type is one of %s, char[N], char[] or unsigned long[]", strings.Join(synthTypeNames, ", "))
			}
		}
		return SynthField{}, 0, e
	}
	if b := strings.IndexByte(f.Type, '['); b >= 0 && !synthArrayBase[f.Type[:b]] {
		// The kernel finds "char[" or "long[" anywhere in the type and
		// takes "xchar[4]"; its format file then cannot be read back.
		return SynthField{}, 0, errf(typ.off, typ.off+len(typ.s), synthInvalidType).
			WithHint("only char and unsigned char (strings), and long and unsigned long (stacktraces) make arrays")
	}
	f.Size = size
	switch {
	case strings.Contains(f.Type, "char["):
		f.Kind = SynthString
		if size == 0 {
			f.Kind, f.Size = SynthDynString, 8
		}
	case strings.Contains(f.Type, "long[") && size == 0:
		f.Kind, f.Size = SynthStack, 8
	}
	// The kernel decides on the type as the format writes it: a
	// __data_loc field is signed, "unsigned long[]" too.
	f.Signed = f.Kind == SynthDynString || f.Kind == SynthStack || !strings.HasPrefix(f.Type, "u") && f.Type != "gfp_t"
	return f, n, nil
}

// synthFieldSize returns the size of a field of type t as the kernel
// works it out: that of a type it knows by name, N of a string char[N]
// (0 for char[], also for char[0]), 0 for a stacktrace (anything with
// "long[" in it) and for a type it does not know; ok is false for a
// string whose size is not a number from 0 to 256 written in at most
// three characters.
func synthFieldSize(t string) (size int, ok bool) {
	if s, known := synthTypes[t]; known {
		return s, true
	}
	start := strings.Index(t, "char[")
	if start < 0 {
		return 0, true
	}
	start += len("char[")
	end := strings.IndexByte(t, ']')
	if end < start || end != len(t)-1 || end-start > 3 {
		return 0, false
	}
	if end == start {
		return 0, true
	}
	n, ok := kernelUint(t[start:end])
	if !ok || n > synthStrMax {
		return 0, false
	}
	return int(n), true
}

// kernelUint parses s as the kernel's kstrtouint with base 0 does: an
// optional '+', then hex after 0x, octal after 0, else decimal.
func kernelUint(s string) (uint64, bool) {
	s = strings.TrimPrefix(s, "+")
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, base, 32)
	return n, err == nil
}

// ExistsError returns the kernel's "Event already exists" error, with
// the caret on the definition's name, for a definition whose name is
// taken; name names the input.
func (d *SynthDef) ExistsError(name string) *Error {
	return Errorf(name, d.Src, d.NameOff, d.NameOff+len(d.Name), "%s", synthExists).
		WithHint("synthetic event %q is defined already: give each definition once, or another name", d.Name)
}

// String returns the definition as the kernel lists it in
// synthetic_events: the name, a tab, and the fields joined by "; ", each
// its type (arrays on the type) and name.
func (d *SynthDef) String() string {
	var b strings.Builder
	b.WriteString(d.Name)
	b.WriteByte('\t')
	for i, f := range d.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Type)
		b.WriteByte(' ')
		b.WriteString(f.Name)
	}
	return b.String()
}

// synthFmt is the printf conversion of a field in the print fmt, as the
// kernel's synth_field_fmt gives it.
func (f *SynthField) synthFmt() string {
	switch f.Type {
	case "s64":
		return "%lld"
	case "u64":
		return "%llu"
	case "s32", "s16", "s8", "char", "int", "bool", "pid_t":
		return "%d"
	case "u32", "u16", "u8", "unsigned char", "unsigned int":
		return "%u"
	case "long":
		return "%ld"
	case "unsigned long":
		return "%lu"
	case "gfp_t":
		return "%x"
	}
	switch f.Kind {
	case SynthString, SynthDynString, SynthStack:
		// Kernels before the 2025 fix (backported to the stable 6.1 and
		// 6.12) wrote "%.*s" for strings, with one argument.
		return "%s"
	}
	return "%llu"
}

// FormatFile returns the text of the event's format file as the kernel
// writes it: the common fields, each field in its slot (8 bytes, 256 for
// a static string, written "char NAME[]" with its size), __data_loc for
// dynamic strings and stacktraces, and the print fmt. The kernel numbers
// its synthetic events as it creates them; id is the one to write.
func (d *SynthDef) FormatFile(id int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nID: %d\nformat:\n", d.Name, id)
	b.WriteString("\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n")
	off := CommonSize
	for _, f := range d.Fields {
		decl := f.Type + " " + f.Name
		switch f.Kind {
		case SynthDynString, SynthStack:
			decl = "__data_loc " + decl
		case SynthString:
			decl = f.Type[:strings.IndexByte(f.Type, '[')] + " " + f.Name + "[]"
		}
		sign := 0
		if f.Signed {
			sign = 1
		}
		fmt.Fprintf(&b, "\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%d;\n", decl, off, f.Size, sign)
		if f.Kind == SynthString {
			off += synthStrMax
		} else {
			off += 8
		}
	}
	b.WriteString("\nprint fmt: \"")
	for i, f := range d.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name + "=" + f.synthFmt())
	}
	b.WriteByte('"')
	for _, f := range d.Fields {
		switch f.Kind {
		case SynthDynString:
			b.WriteString(", __get_str(" + f.Name + ")")
		case SynthStack:
			b.WriteString(", __get_stacktrace(" + f.Name + ")")
		default:
			b.WriteString(", REC->" + f.Name)
		}
	}
	b.WriteByte('\n')
	return b.String()
}

// Format returns the event's format, as ParseFormat reads FormatFile(id),
// with System "synthetic".
func (d *SynthDef) Format(id int) *Format {
	f, err := ParseFormat(d.Name, d.FormatFile(id))
	if err != nil {
		panic(fmt.Sprintf("synthetic event %s: derived format does not parse: %v", d.Name, err))
	}
	f.System = SynthSystem
	return f
}
