package hist

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
)

// pseudo-fields that exist for every event, after the event's own fields.
var pseudoKeys = map[string]KeyKind{
	"common_cpu":  KeyNumber,
	"comm":        KeyString,
	"COMM":        KeyString,
	"common_comm": KeyString,
}

// NewPlan resolves spec against the format of the event it is for. Errors
// are *parse.Error pointing into spec.Src.
func NewPlan(spec *parse.HistSpec, f *parse.Format) (*Plan, error) {
	if err := interEvent(spec); err != nil {
		return nil, err
	}
	return newPlan(spec, f)
}

// newPlan is NewPlan without the refusal of variables: a value that
// uses a variable reference gets a Val without Expr, which a Session
// computes.
func newPlan(spec *parse.HistSpec, f *parse.Format) (*Plan, error) {
	p := &Plan{Event: f.FullName(), Spec: spec, Size: spec.EffectiveSize()}
	for _, k := range spec.Keys {
		key, err := resolveKey(spec, f, k)
		if err != nil {
			return nil, err
		}
		p.Keys = append(p.Keys, key)
	}
	for _, v := range spec.Vals {
		if v.Name == "hitcount" {
			p.HitcountMod = v.Mod
			continue
		}
		if v.HasRef() {
			p.Vals = append(p.Vals, Val{Spec: v})
			continue
		}
		if computed(v) {
			e, err := resolveExpr(spec, f, v)
			if err != nil {
				return nil, err
			}
			p.Vals = append(p.Vals, Val{Spec: v, Signed: e.Signed, Expr: e})
			continue
		}
		fld := f.Field(v.Name)
		if fld == nil {
			return nil, unknownField(spec, f, v)
		}
		if fld.Class != parse.ClassNumeric || fld.Common {
			return nil, spec.Errorf(v.Off, v.End, "field %q (%s) cannot be a value: values must be numeric fields of the event", v.Name, fldClass(fld))
		}
		p.Vals = append(p.Vals, Val{Spec: v, Signed: fld.Signed})
	}
	p.Layout = layout(p, f)
	return p, nil
}

// layout places the plan's keys and values in the bytes of a BPF hash
// map's key and value, as the BPF program and the file engine fill them.
func layout(p *Plan, f *parse.Format) *bpfgen.HistLayout {
	l := &bpfgen.HistLayout{MaxEntries: p.Size, CommOff: -1}
	off := 0
	for _, k := range p.Keys {
		slot := bpfgen.KeySlot{Off: off, Size: 8}
		switch k.Spec.Name {
		case "common_pid":
			slot.Src = bpfgen.SrcPID
		case "common_cpu":
			slot.Src = bpfgen.SrcCPU
		case "common_stacktrace":
			slot.Src = bpfgen.SrcStack
			slot.Skip = bpfgen.StackSkip(f.System, f.Name)
			if k.Frames {
				slot.Size = bpfgen.FramesSize
			}
		case "ustacktrace":
			slot.Src = bpfgen.SrcUStack
		default:
			if fld := f.Field(k.Spec.Name); fld != nil {
				slot.Src = bpfgen.SrcField
				slot.Field = fld
				if k.Frames {
					slot.Size = bpfgen.FramesSize
				}
				if k.Kind == KeyString {
					slot.Size = bpfgen.StringSlotSize(fld)
					// A syscall's char * points to the caller's memory.
					slot.User = fld.Class == parse.ClassStringPtr && f.System == "syscalls"
				}
			} else {
				slot.Src = bpfgen.SrcComm
				slot.Size = bpfgen.CommLen
			}
		}
		if k.Expr != nil {
			slot = bpfgen.KeySlot{Off: off, Size: 8, Src: bpfgen.SrcExpr, Expr: k.Expr}
		}
		switch k.Spec.Mod {
		case parse.ModLog2:
			slot.Op = bpfgen.OpLog2
		case parse.ModBuckets:
			slot.Op = bpfgen.OpBuckets
			slot.Buckets = k.Spec.Buckets
		case parse.ModExecname:
			l.CommOff = 0 // placed below
		}
		l.Keys = append(l.Keys, slot)
		off += slot.Size
	}
	l.KeySize = off
	voff := 8
	for _, v := range p.Vals {
		if v.Expr != nil {
			l.Vals = append(l.Vals, bpfgen.ValSlot{Expr: v.Expr, Off: voff})
			voff += 8
			continue
		}
		l.Vals = append(l.Vals, bpfgen.ValSlot{Field: f.Field(v.Spec.Name), Off: voff})
		voff += 8
	}
	for _, v := range p.Vals {
		// A sum's .percent divides by the sum over every event, the
		// dropped ones too.
		if v.Spec.Mod == parse.ModPercent {
			l.DropSums = true
		}
	}
	if l.CommOff == 0 {
		l.CommOff = voff
		voff += bpfgen.CommLen
	}
	l.ValueSize = voff
	return l
}

func fldClass(f *parse.Field) string {
	if f.Common {
		return "common header field"
	}
	return f.Class.String()
}

func resolveKey(spec *parse.HistSpec, f *parse.Format, k parse.HistField) (Key, error) {
	bad := func(format string, args ...any) (Key, error) {
		return Key{}, spec.Errorf(k.Off, k.End, format, args...)
	}
	if k.Mod == parse.ModStacktrace {
		if fld := f.Field(k.Name); fld != nil && isStackField(fld) {
			return Key{Spec: k, Kind: KeyStack, Frames: true}, nil
		}
		return Key{}, notStack(spec, f, k)
	}
	if computed(k) {
		e, err := resolveExpr(spec, f, k)
		if err != nil {
			return Key{}, err
		}
		return Key{Spec: k, Kind: KeyNumber, Signed: e.Signed, Expr: e}, nil
	}
	if fld := f.Field(k.Name); fld != nil {
		switch {
		case fld.Class.IsString():
			if k.Mod != parse.ModNone {
				return bad("invalid field modifier .%s on string field %q", k.Mod, k.Name)
			}
			return Key{Spec: k, Kind: KeyString}, nil
		case fld.Class == parse.ClassStringPtr && k.Mod == parse.ModNone:
			// The string pointed to, not the pointer (grammar §12.16).
			return Key{Spec: k, Kind: KeyString}, nil
		case fld.Class == parse.ClassNumeric || fld.Class == parse.ClassStringPtr:
			if fld.Common && fld.Name != "common_pid" {
				return bad("field %q is not available to BPF programs (only common_pid of the common header is)", k.Name)
			}
			if k.Mod == parse.ModExecname && fld.Name != "common_pid" {
				return bad("invalid field modifier .execname: it applies only to common_pid")
			}
			return Key{Spec: k, Kind: KeyNumber, Signed: fld.Signed}, nil
		default:
			return bad("field %q (%s) cannot be a hist key", k.Name, fld.Class)
		}
	}
	if k.Name == "common_stacktrace" || k.Name == "ustacktrace" {
		if k.Mod != parse.ModNone {
			return bad("invalid field modifier .%s: %s takes no modifier", k.Mod, k.Name)
		}
		return Key{Spec: k, Kind: KeyStack, User: k.Name == "ustacktrace"}, nil
	}
	kind, ok := pseudoKeys[k.Name]
	if !ok {
		return Key{}, unknownField(spec, f, k)
	}
	if kind == KeyString && k.Mod != parse.ModNone {
		return bad("invalid field modifier .%s on string field %q", k.Mod, k.Name)
	}
	if k.Mod == parse.ModExecname {
		return bad("invalid field modifier .execname: it applies only to common_pid")
	}
	return Key{Spec: k, Kind: kind}, nil
}

// isStackField reports whether fld holds a stack: a synthetic event's
// unsigned long[] (or long[]) field, a __data_loc of frames.
func isStackField(fld *parse.Field) bool {
	return fld.Class == parse.ClassDataLoc && strings.HasSuffix(fld.Type, "long[]")
}

// notStack refuses .stacktrace on key k: the kernel takes it only on a
// field that holds a stack (an unsigned long[] of a synthetic event),
// which no event's format has; the caret is on the modifier.
func notStack(spec *parse.HistSpec, f *parse.Format, k parse.HistField) error {
	name := spec.WrittenName(k)
	what := fmt.Sprintf("field %q of %s", name, f.FullName())
	if f.Field(k.Name) == nil {
		if _, ok := pseudoKeys[k.Name]; !ok {
			return unknownField(spec, f, k)
		}
		what = fmt.Sprintf("%q", name)
	}
	return spec.Errorf(k.Off+len(name)+1, k.End, "invalid field modifier .stacktrace: %s is not a stack", what).
		WithHint("the kernel stack of the event is the key common_stacktrace")
}

// computed reports whether a key or value is computed rather than read:
// common_timestamp or an expression.
func computed(h parse.HistField) bool {
	return h.Op != 0 || h.Name == "common_timestamp"
}

// resolveExpr resolves common_timestamp or an expression against the
// event's format: the operands are numeric fields of the event,
// common_pid, common_cpu, common_timestamp and constants. An operator
// is signed when an operand is.
func resolveExpr(spec *parse.HistSpec, f *parse.Format, h parse.HistField) (*bpfgen.Expr, error) {
	switch {
	case h.Op != 0:
		e := &bpfgen.Expr{Op: h.Op}
		l, err := resolveExpr(spec, f, h.Operands[0])
		if err != nil {
			return nil, err
		}
		e.L, e.Signed = l, l.Signed
		if len(h.Operands) > 1 {
			r, err := resolveExpr(spec, f, h.Operands[1])
			if err != nil {
				return nil, err
			}
			e.R, e.Signed = r, e.Signed || r.Signed
		}
		return e, nil
	case h.Const:
		return &bpfgen.Expr{Src: bpfgen.SrcConst, Const: h.Value}, nil
	case h.Name == "common_timestamp":
		return &bpfgen.Expr{Src: bpfgen.SrcTime, Usecs: h.Mod == parse.ModUsecs}, nil
	}
	if fld := f.Field(h.Name); fld != nil {
		switch {
		case fld.Class.IsString():
			return nil, spec.Errorf(h.Off, h.End, "string type can not be an operand in expression").
				WithHint("%q is a string field", h.Name)
		case fld.Class != parse.ClassNumeric:
			return nil, spec.Errorf(h.Off, h.End, "field %q (%s) cannot be an operand in an expression", h.Name, fldClass(fld))
		case fld.Name == "common_pid":
			return &bpfgen.Expr{Src: bpfgen.SrcPID, Signed: true}, nil
		case fld.Common:
			return nil, spec.Errorf(h.Off, h.End, "field %q is not available to BPF programs (only common_pid of the common header is)", h.Name)
		}
		return &bpfgen.Expr{Src: bpfgen.SrcField, Field: fld, Signed: fld.Signed}, nil
	}
	switch h.Name {
	case "common_cpu":
		return &bpfgen.Expr{Src: bpfgen.SrcCPU}, nil
	case "comm", "COMM", "common_comm":
		return nil, spec.Errorf(h.Off, h.End, "string type can not be an operand in expression").
			WithHint("%q is the task's name", h.Name)
	}
	return nil, unknownField(spec, f, h)
}

// unknownField is the error of a key or value that names no field of
// the event, with a hint of the closest name.
func unknownField(spec *parse.HistSpec, f *parse.Format, k parse.HistField) error {
	name := spec.WrittenName(k)
	e := spec.Errorf(k.Off, k.Off+len(name), "unknown field %q in %s", name, f.FullName())
	names := []string{"common_cpu", "comm", "common_stacktrace", "ustacktrace"}
	for _, fld := range f.Fields {
		names = append(names, fld.Name)
	}
	if s := parse.Nearest(name, names); s != "" {
		e.WithHint("did you mean %q?", s)
	} else {
		sort.Strings(names)
		e.WithHint("fields are %v (gtrace list -F %s)", names, f.FullName())
	}
	return e
}

// String describes the plan in one line per key and value (for --dry-run).
func (p *Plan) String() string {
	s := fmt.Sprintf("event %s, size %d\n", p.Event, p.Size)
	for _, k := range p.Keys {
		kind := "number"
		switch k.Kind {
		case KeyString:
			kind = "string"
		case KeyStack:
			kind = "kernel stack"
			if k.User {
				kind = "user stack"
			}
		}
		s += fmt.Sprintf("  key   %s%s (%s)\n", k.Spec.Name, modSuffix(k.Spec), kind)
	}
	s += "  value hitcount\n"
	for _, v := range p.Vals {
		s += fmt.Sprintf("  value %s%s (sum)\n", v.Spec.Name, modSuffix(v.Spec))
	}
	if p.Layout != nil && p.Layout.DropSums {
		s += "  dropped sums: each value of a dropped event, for .percent\n"
	}
	return s
}

func modSuffix(f parse.HistField) string {
	switch f.Mod {
	case parse.ModNone:
		return ""
	case parse.ModBuckets:
		return fmt.Sprintf(".buckets=%d", f.Buckets)
	}
	return "." + f.Mod.String()
}

// interEvent refuses what a hist outside a session does not run:
// variables, their references and actions, which a Session binds
// (NewSession) and runs live (NewLive) or over a recording.
func interEvent(spec *parse.HistSpec) error {
	const hint = "inter-event hists (variables, onmatch, onmax, onchange) run in gtrace hist, live or over a recording (-i), not as a recording's hist triggers yet"
	if len(spec.Vars) > 0 {
		v := spec.Vars[0]
		return spec.Errorf(v.Off, v.End, "not implemented by gtrace yet: hist variables").WithHint(hint)
	}
	if len(spec.Actions) > 0 {
		a := spec.Actions[0]
		return spec.Errorf(a.Off, a.End, "not implemented by gtrace yet: hist actions").WithHint(hint)
	}
	for _, v := range spec.Vals {
		if v.HasRef() {
			return spec.Errorf(v.Off, v.End, "not implemented by gtrace yet: variable references").WithHint(hint)
		}
	}
	return nil
}
