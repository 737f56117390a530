package parse

import (
	"strconv"
	"strings"
)

// FieldClass says how a field's bytes are to be read; it decides which
// filter operators and hist modifiers apply.
type FieldClass int

// Field classes.
const (
	ClassNumeric   FieldClass = iota // integer of size 1, 2, 4 or 8
	ClassString                      // char name[N]: a static string
	ClassDataLoc                     // __data_loc char[]: u32 (len<<16 | off from record start)
	ClassRelLoc                      // __rel_loc char[]: u32 (len<<16 | off from the end of the u32)
	ClassStringPtr                   // char * / const char *: a raw pointer
	ClassArray                       // an array of numbers, or anything else not usable as a scalar
)

var classNames = [...]string{"numeric", "string", "__data_loc string", "__rel_loc string", "string pointer", "array"}

func (c FieldClass) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "FieldClass(" + strconv.Itoa(int(c)) + ")"
}

// IsString reports whether fields of this class hold text that string
// operators compare (static arrays and dynamic strings).
func (c FieldClass) IsString() bool {
	return c == ClassString || c == ClassDataLoc || c == ClassRelLoc
}

// Field is one `field:` line of a format file.
type Field struct {
	Name     string     // C name, e.g. "prev_comm"
	Type     string     // C type without the name, e.g. "char[16]", "unsigned long", "__data_loc char[]"
	Offset   int        // byte offset in the record
	Size     int        // byte size in the record
	Signed   bool       // the format's signed: flag
	Class    FieldClass // how to read it
	ArrayLen int        // element count for arrays, -1 for a flexible array ("[]")
	Common   bool       // one of the common_* header fields
}

// Format is a parsed tracefs `format` file.
type Format struct {
	System   string // subsystem, set by the caller (the file does not name it)
	Name     string // event name
	ID       int    // common_type value of this event's records
	Fields   []Field
	PrintFmt string // text after "print fmt: "
	// Probes are the definitions of a probe event (catalog.WithProbes),
	// whose program builds the record from their fetch arguments; nil
	// for an event of the kernel's.
	Probes []*ProbeDef
	// Func is the function event of a function event's format
	// (catalog.WithFuncEvents), whose program is its equivalent probe's
	// (Probes, FuncEvent.Probe) building Func's record; nil for others.
	Func *FuncEvent
}

// DerivedFile returns the text of a probe or function event's format
// file, as its definition derives it; "" for an event of the kernel's.
func (f *Format) DerivedFile() string {
	switch {
	case f.Func != nil:
		return f.Func.FormatFile(f.ID)
	case len(f.Probes) > 0:
		return f.Probes[0].FormatFile(f.ID)
	}
	return ""
}

// Field returns the field with the given name, or nil.
func (f *Format) Field(name string) *Field {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// FullName returns "system:name".
func (f *Format) FullName() string { return f.System + ":" + f.Name }

// ParseFormat parses the text of an events/SYSTEM/EVENT/format file. name
// is used in errors (for example the file's path).
func ParseFormat(name, src string) (*Format, error) {
	f := &Format{}
	off := 0
	inFields := false
	seen := map[string]bool{} // field names: a crafted format may have thousands
	for off < len(src) {
		end := strings.IndexByte(src[off:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += off
		}
		line := src[off:end]
		lineOff := off
		off = end + 1
		trimmed := strings.TrimSpace(line)
		lead := lineOff + strings.Index(line, trimmed)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "name:"):
			f.Name = strings.TrimSpace(trimmed[len("name:"):])
		case strings.HasPrefix(trimmed, "ID:"):
			v := strings.TrimSpace(trimmed[len("ID:"):])
			id, err := strconv.Atoi(v)
			if err != nil || id < 0 || id > 0xffff {
				return nil, Errorf(name, src, lead+3, lineOff+len(line), "bad event ID %q", v)
			}
			f.ID = id
		case trimmed == "format:":
			inFields = true
		case strings.HasPrefix(trimmed, "print fmt:"):
			// The print format runs to the end of the file: some events'
			// formats span several lines.
			start := lead + len("print fmt:")
			f.PrintFmt = strings.TrimSpace(src[start:])
			off = len(src)
		case strings.HasPrefix(trimmed, "field:") && inFields:
			fld, err := parseFieldLine(name, src, lead, trimmed)
			if err != nil {
				return nil, err
			}
			if seen[fld.Name] {
				return nil, Errorf(name, src, lead, lead+len(trimmed), "duplicate field %q", fld.Name)
			}
			seen[fld.Name] = true
			f.Fields = append(f.Fields, fld)
		default:
			return nil, Errorf(name, src, lead, lead+len(trimmed), "unexpected line in format file")
		}
	}
	if f.Name == "" {
		return nil, Errorf(name, src, 0, 0, "format file has no name: line")
	}
	if !inFields {
		return nil, Errorf(name, src, 0, 0, "format file has no format: section")
	}
	return f, nil
}

// parseFieldLine parses "field:DECL;\toffset:N;\tsize:N;\tsigned:N;" whose
// first byte is at src[at].
func parseFieldLine(name, src string, at int, line string) (Field, error) {
	var fld Field
	parts := strings.Split(line, ";")
	seen := map[string]bool{}
	pos := at
	for _, part := range parts {
		partOff := pos
		pos += len(part) + 1
		p := strings.TrimSpace(part)
		if p == "" {
			continue
		}
		pOff := partOff + strings.Index(part, p)
		key, val, ok := strings.Cut(p, ":")
		if !ok {
			return fld, Errorf(name, src, pOff, pOff+len(p), "expected key:value in field line")
		}
		val = strings.TrimSpace(val)
		valOff := pOff + len(key) + 1
		if seen[key] {
			return fld, Errorf(name, src, pOff, pOff+len(key), "repeated %q in field line", key)
		}
		seen[key] = true
		switch key {
		case "field":
			if err := parseDecl(&fld, val); err != nil {
				return fld, Errorf(name, src, valOff, valOff+len(p)-len(key)-1, "%s", err.Error())
			}
		case "offset", "size", "signed":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > 1<<20 {
				return fld, Errorf(name, src, valOff, valOff+len(p)-len(key)-1, "bad %s value %q", key, val)
			}
			switch key {
			case "offset":
				fld.Offset = n
			case "size":
				fld.Size = n
			default:
				fld.Signed = n != 0
			}
		default:
			// Unknown attributes are ignored, as libtraceevent does.
		}
	}
	for _, k := range []string{"field", "offset", "size"} {
		if !seen[k] {
			return fld, Errorf(name, src, at, at+len(line), "field line has no %s:", k)
		}
	}
	fld.Common = strings.HasPrefix(fld.Name, "common_")
	classify(&fld)
	return fld, nil
}

type declError string

func (e declError) Error() string { return string(e) }

// parseDecl splits a C declaration such as "unsigned long args[6]",
// "__data_loc char[] name" or "const char * filename" into name and type.
func parseDecl(fld *Field, decl string) error {
	d := strings.TrimSpace(decl)
	fld.ArrayLen = 0
	// "__data_loc char[] name": the brackets belong to the type.
	arr := ""
	if i := strings.LastIndexByte(d, '['); i >= 0 && strings.HasSuffix(d, "]") {
		arr = d[i:]
		d = strings.TrimSpace(d[:i])
	}
	j := len(d)
	for j > 0 && isIdentByte(d[j-1]) {
		j--
	}
	ident := d[j:]
	if ident == "" || (ident[0] >= '0' && ident[0] <= '9') {
		return declError("no field name in declaration " + strconv.Quote(decl))
	}
	typ := strings.TrimSpace(d[:j])
	if typ == "" {
		return declError("no type in declaration " + strconv.Quote(decl))
	}
	fld.Name = ident
	fld.Type = typ + arr
	if arr != "" {
		n := strings.TrimSpace(arr[1 : len(arr)-1])
		if n == "" {
			fld.ArrayLen = -1
		} else if v, err := strconv.ParseInt(n, 0, 32); err == nil && v >= 0 {
			fld.ArrayLen = int(v)
		} else {
			// A symbolic length (e.g. TASK_COMM_LEN): the size says how big.
			fld.ArrayLen = -1
		}
	}
	return nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func classify(fld *Field) {
	t := fld.Type
	switch {
	case strings.HasPrefix(t, "__data_loc"):
		fld.Class = ClassDataLoc
	case strings.HasPrefix(t, "__rel_loc"):
		fld.Class = ClassRelLoc
	case fld.ArrayLen != 0:
		base := strings.TrimSpace(t[:strings.LastIndexByte(t, '[')])
		if isCharType(base) {
			fld.Class = ClassString
		} else {
			fld.Class = ClassArray
		}
	case strings.HasSuffix(t, "*"):
		base := strings.TrimSpace(strings.TrimSuffix(t, "*"))
		if isCharType(base) {
			fld.Class = ClassStringPtr
		} else {
			fld.Class = ClassNumeric
		}
	case fld.Size == 1 || fld.Size == 2 || fld.Size == 4 || fld.Size == 8:
		fld.Class = ClassNumeric
	default:
		fld.Class = ClassArray
	}
}

func isCharType(t string) bool {
	t = strings.TrimPrefix(t, "const ")
	t = strings.TrimPrefix(t, "unsigned ")
	t = strings.TrimPrefix(t, "signed ")
	return t == "char"
}

// Decl returns the field's C declaration as the format file writes it:
// "char prev_comm[16]", "__data_loc char[] filename", "long id".
func (fld *Field) Decl() string {
	t := fld.Type
	if i := strings.IndexByte(t, '['); i >= 0 && fld.Class != ClassDataLoc && fld.Class != ClassRelLoc {
		return strings.TrimSpace(t[:i]) + " " + fld.Name + t[i:]
	}
	return t + " " + fld.Name
}
