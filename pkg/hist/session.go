package hist

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// An inter-event session (grammar §4.4-4.6, §5, §7): hists on several
// events bound together by their variables, references and actions, as
// the kernel binds the hist triggers of one instance. NewSession binds
// them; Session.Add and Session.RunFile run them over records (the
// engine, session_run.go).

// SessionHist is one hist of a session: the format of its event and its
// spec. An event may have several.
type SessionHist struct {
	Format *parse.Format
	Spec   *parse.HistSpec
}

// SynthEvent is a synthetic event a session's actions may emit: its
// definition and its format (the catalog's, catalog.WithSynth).
type SynthEvent struct {
	Def    *parse.SynthDef
	Format *parse.Format
}

// Session is hists bound together: every variable reference resolved to
// the hist that sets it, every action to what it reads and emits. It
// keeps the hists' tables as records are added.
type Session struct {
	hists   []*sessHist // the given hists in order, then the field-variable hists
	byID    map[int][]*sessHist
	byEvent map[string][]*sessHist // by "sys:event"
	synths  map[string]*sessSynth
	events  []string // the events of the given hists, in first-seen order
	funcs   parse.FuncResolver
	// lost is the number of events, of any event type, the ring buffer
	// lost while the file was recorded, as far as its records say.
	lost uint64
	// depth is how deep the current chain of emitted synthetic events
	// is (synthetic events whose hists emit synthetic events).
	depth int
	// live: the session runs on BPF (compileLive), whose hists may
	// hold stacks; the records of a file hold none.
	live bool
}

// maxSynthDepth bounds a chain of synthetic events, each emitted by an
// action of a hist of the one before.
const maxSynthDepth = 16

// sessSynth is a synthetic event of the session.
type sessSynth struct {
	def *parse.SynthDef
	fm  *parse.Format
}

// sessHist is one bound hist.
type sessHist struct {
	fm      *parse.Format
	spec    *parse.HistSpec
	run     *fileRun // the keys and the filter, as the file engine computes them
	hidden  bool     // a field variable's hist, made for an action's param
	vars    []sessVar
	vals    []*sexpr // one per run.plan.Vals
	refs    []sessRef
	actions []sessAction
	saves   []sessParam // the save() fields of the hist (one save action at most)

	// the table, as the engine fills it
	entries map[string]*sessEntry
	order   []*sessEntry
	dropped uint64
	snap    *Snapshot
	snapVal uint64 // the value of the last snapshot (the kernel's global track value)
	refVals []sessVal
	key     []byte
}

// sessVar is a variable of a hist.
type sessVar struct {
	name  string
	expr  *sexpr
	typ   valType
	usecs bool // common_timestamp.usecs, or an expression of it
	stamp bool // a time stamp, or an expression of one
}

// valType is the type of a value as the kernel's hist_field has it, for
// the synthetic event's type rule.
type valType struct {
	name   string // "u64", "pid_t", "char[16]", "unsigned long[]"
	size   int
	signed bool
	str    bool
	stack  bool // a kernel stack's frames (common_stacktrace)
}

// stackType is the type of a stack variable, as the kernel's.
var stackType = valType{name: "unsigned long[]", size: 8, stack: true}

// sessRef is a variable reference of a hist: to variable v of hist h.
type sessRef struct {
	h        *sessHist
	v        int
	readOnce bool // inside an expression: reading it unsets it
	self     bool // a variable of the hist itself
}

// sessVal is a variable's value in an entry, or a reference's.
type sessVal struct {
	set bool
	num uint64
	str string
}

// sessAction is one bound action.
type sessAction struct {
	a      *parse.HistAction
	track  int // onmax, onchange: the variable watched
	synth  *sessSynth
	params []sessParam // trace: one per field of the synthetic event
}

// sessParam is where an action's param, or a save() field, is read:
// a reference (ref >= 0) or a field of the event.
type sessParam struct {
	name  string
	ref   int
	field *parse.Field
	typ   valType
}

// leafKind is what a leaf of an expression reads.
type leafKind int

const (
	leafConst leafKind = iota
	leafTime
	leafField
	leafPID
	leafCPU
	leafComm
	leafRef
	leafStack // the event's kernel stack (common_stacktrace)
)

// sexpr is an expression of a session's hist: a tree of operators over
// leaves that read the record, the time stamp or a reference.
type sexpr struct {
	op     byte // 0 for a leaf, else as parse.HistField.Op
	l, r   *sexpr
	signed bool
	kind   leafKind
	usecs  bool
	c      uint64
	field  *parse.Field
	ref    int // leafRef: index in sessHist.refs
}

// NewSession binds hists, in command-line order, and the synthetic
// events their actions may emit; funcs resolves the filters' .function
// values (nil: there are none). Errors are *parse.Error on the Src of
// the hist at fault, with the kernel's messages.
func NewSession(hists []SessionHist, synths []SynthEvent, funcs parse.FuncResolver) (*Session, error) {
	return newSession(hists, synths, funcs, false)
}

// newSession is NewSession for records (live false), which refuses
// stacks, or for BPF (live true).
func newSession(hists []SessionHist, synths []SynthEvent, funcs parse.FuncResolver, live bool) (*Session, error) {
	s := &Session{byID: map[int][]*sessHist{}, byEvent: map[string][]*sessHist{}, synths: map[string]*sessSynth{}, funcs: funcs, live: live}
	for _, e := range synths {
		s.synths[e.Def.Name] = &sessSynth{def: e.Def, fm: e.Format}
	}
	for _, sh := range hists {
		h, err := s.addHist(sh.Spec, sh.Format)
		if err != nil {
			return nil, err
		}
		if len(s.byEvent[h.fm.FullName()]) == 1 {
			s.events = append(s.events, h.fm.FullName())
		}
	}
	// References and actions may name hists given after them.
	n := len(s.hists)
	for _, h := range s.hists[:n] {
		if err := s.bind(h); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// addHist resolves spec's keys, values and filter against fm, and its
// variables' names; the references are bound later.
func (s *Session) addHist(spec *parse.HistSpec, fm *parse.Format) (*sessHist, error) {
	if spec.Name != "" {
		return nil, spec.Errorf(spec.NameOff, spec.NameOff+len(spec.Name), "a named hist in an inter-event session: not supported by gtrace").
			WithHint("leave name= out of the hists of a session (hists with variables or actions, or on synthetic events)")
	}
	p, err := newPlan(spec, fm)
	if err != nil {
		return nil, err
	}
	if s.live && slices.ContainsFunc(p.Keys, func(k Key) bool { return k.Kind == KeyStack }) {
		// Live, a stack key is its frames, as a stack variable is: a
		// program cannot read a stack map's frames back.
		for i, k := range p.Keys {
			if k.User {
				return nil, spec.Errorf(k.Spec.Off, k.Spec.End, "a user stack key in an inter-event session: not supported by gtrace").
					WithHint("key the session's hists on common_stacktrace, the kernel stack")
			}
			p.Keys[i].Frames = k.Kind == KeyStack
		}
		p.Layout = layout(p, fm)
	}
	r, err := newFileRunPlan(p, fm, nil, s.funcs)
	if err != nil {
		return nil, err
	}
	h := &sessHist{fm: fm, spec: spec, run: r, entries: map[string]*sessEntry{}, key: make([]byte, r.keySize)}
	for _, v := range spec.Vars {
		h.vars = append(h.vars, sessVar{name: v.Name})
	}
	s.hists = append(s.hists, h)
	s.byID[fm.ID] = append(s.byID[fm.ID], h)
	s.byEvent[fm.FullName()] = append(s.byEvent[fm.FullName()], h)
	return h, nil
}

// bind resolves h's variables, values and actions.
func (s *Session) bind(h *sessHist) error {
	spec := h.spec
	for i, v := range spec.Vars {
		e, err := s.expr(h, v.Expr, true)
		if err != nil {
			return err
		}
		if (v.Expr.Name == "common_stacktrace" || v.Expr.Name == "ustacktrace") && v.Expr.Op == 0 && v.Expr.Ref == nil {
			if !s.live {
				return spec.Errorf(v.Expr.Off, v.Expr.End, "a stack variable needs a live hist: a trace.dat's records hold no stacks")
			}
			if v.Expr.Name == "ustacktrace" {
				return spec.Errorf(v.Expr.Off, v.Expr.End, "a user stack variable: not supported by gtrace").
					WithHint("a variable holds the kernel stack, common_stacktrace")
			}
		}
		h.vars[i].expr = e
		h.vars[i].typ = s.typeOf(h, v.Expr)
		h.vars[i].usecs, h.vars[i].stamp = s.units(h, v.Expr)
	}
	if !s.live {
		if err := noStackKeys(h.run.plan); err != nil {
			return err
		}
	}
	for i, v := range h.run.plan.Vals {
		if !v.Spec.HasRef() {
			h.vals = append(h.vals, nil)
			continue
		}
		e, err := s.expr(h, v.Spec, true)
		if err != nil {
			return err
		}
		if e.kind == leafComm || (e.kind == leafField && e.field.Class != parse.ClassNumeric) || (e.kind == leafRef && h.refs[e.ref].h.vars[h.refs[e.ref].v].typ.str) {
			return spec.Errorf(v.Spec.Off, v.Spec.End, "a string cannot be a value: values are summed")
		}
		if h.isStack(e) {
			return spec.Errorf(v.Spec.Off, v.Spec.End, "a stack cannot be a value: values are summed")
		}
		h.run.plan.Vals[i].Signed = e.signed
		h.vals = append(h.vals, e)
	}
	for i := range spec.Actions {
		if err := s.bindAction(h, &spec.Actions[i]); err != nil {
			return err
		}
	}
	return nil
}

// expr resolves f, an expression, a field or a reference of h's event.
// A reference inside an operator is read-once (grammar §4.4).
func (s *Session) expr(h *sessHist, f parse.HistField, top bool) (*sexpr, error) {
	spec := h.spec
	if f.Op != 0 {
		e := &sexpr{op: f.Op}
		l, err := s.expr(h, f.Operands[0], false)
		if err != nil {
			return nil, err
		}
		e.l, e.signed = l, l.signed
		if len(f.Operands) > 1 {
			r, err := s.expr(h, f.Operands[1], false)
			if err != nil {
				return nil, err
			}
			e.r, e.signed = r, e.signed || r.signed
			lu, ls := s.units(h, f.Operands[0])
			ru, rs := s.units(h, f.Operands[1])
			if ls && rs && lu != ru {
				return nil, spec.Errorf(f.Off, f.End, "timestamp units in expression don't match").
					WithHint("give both time stamps in the same unit: common_timestamp.usecs, or both in ns")
			}
		}
		for _, o := range []*sexpr{e.l, e.r} {
			if o != nil && (o.kind == leafComm || o.kind == leafField && o.field.Class != parse.ClassNumeric ||
				o.kind == leafRef && h.refs[o.ref].h.vars[h.refs[o.ref].v].typ.str) && o.op == 0 {
				return nil, spec.Errorf(f.Off, f.End, "string type can not be an operand in expression")
			}
			if o != nil && h.isStack(o) {
				return nil, spec.Errorf(f.Off, f.End, "a stack cannot be an operand in an expression")
			}
		}
		return e, nil
	}
	switch {
	case f.Ref != nil:
		i, err := s.ref(h, f, !top)
		if err != nil {
			return nil, err
		}
		r := h.refs[i]
		return &sexpr{kind: leafRef, ref: i, signed: r.h.vars[r.v].typ.signed}, nil
	case f.Const:
		return &sexpr{kind: leafConst, c: f.Value}, nil
	case f.Name == "common_timestamp":
		return &sexpr{kind: leafTime, usecs: f.Mod == parse.ModUsecs}, nil
	case f.Name == "common_cpu":
		return &sexpr{kind: leafCPU}, nil
	case f.Name == "comm" || f.Name == "COMM" || f.Name == "common_comm":
		return &sexpr{kind: leafComm}, nil
	case f.Name == "common_stacktrace" || f.Name == "ustacktrace":
		return &sexpr{kind: leafStack}, nil // on records, refused by bind
	}
	fld := h.fm.Field(f.Name)
	if fld == nil {
		return nil, unknownField(spec, h.fm, f)
	}
	switch {
	case fld.Name == "common_pid":
		return &sexpr{kind: leafPID, signed: true}, nil
	case fld.Class == parse.ClassNumeric:
		return &sexpr{kind: leafField, field: fld, signed: fld.Signed}, nil
	case fld.Class.IsString():
		return &sexpr{kind: leafField, field: fld}, nil
	}
	return nil, spec.Errorf(f.Off, f.End, "field %q (%s) cannot be a variable or an operand", f.Name, fldClass(fld))
}

// isStack reports whether x, an expression of h, is a stack: the
// event's, or a reference to a stack variable.
func (h *sessHist) isStack(x *sexpr) bool {
	return x.op == 0 && (x.kind == leafStack || x.kind == leafRef && h.refs[x.ref].h.vars[h.refs[x.ref].v].typ.stack)
}

// units reports whether f is in microseconds and whether it is a time
// stamp at all: common_timestamp, a reference to a variable that holds
// one, or an expression whose left operand is one.
func (s *Session) units(h *sessHist, f parse.HistField) (usecs, stamp bool) {
	switch {
	case f.Op != 0:
		return s.units(h, f.Operands[0])
	case f.Name == "common_timestamp":
		return f.Mod == parse.ModUsecs, true
	case f.Ref != nil:
		if t, v := s.findVar(h, *f.Ref); len(t) == 1 && t[0].vars[v[0]].expr != nil {
			return t[0].vars[v[0]].usecs, t[0].vars[v[0]].stamp
		} else if len(t) == 1 {
			// Not bound yet: look at the definition.
			return s.units(t[0], t[0].spec.Vars[v[0]].Expr)
		}
	}
	return false, false
}

// typeOf is the kernel's type of a variable's expression: that of its
// field, u64 for common_timestamp and constants, the left operand's for
// an expression.
func (s *Session) typeOf(h *sessHist, f parse.HistField) valType {
	switch {
	case f.Op != 0:
		return s.typeOf(h, f.Operands[0])
	case f.Ref != nil:
		if t, v := s.findVar(h, *f.Ref); len(t) == 1 {
			return s.typeOf(t[0], t[0].spec.Vars[v[0]].Expr)
		}
	case f.Name == "common_cpu":
		return valType{name: "int", size: 4, signed: true}
	case f.Name == "comm" || f.Name == "COMM" || f.Name == "common_comm":
		return valType{name: "char[16]", size: 16, str: true}
	case f.Name == "common_stacktrace" || f.Name == "ustacktrace":
		return stackType
	}
	if fld := h.fm.Field(f.Name); fld != nil && !f.Const && f.Name != "common_timestamp" {
		return fieldType(fld)
	}
	return valType{name: "u64", size: 8}
}

// fieldType is the type of a field as the kernel's hist_field has it.
func fieldType(fld *parse.Field) valType {
	t := valType{name: strings.TrimPrefix(fld.Type, "__data_loc "), size: fld.Size, signed: fld.Signed, str: fld.Class.IsString()}
	if t.str && !strings.Contains(t.name, "[") {
		t.name += fmt.Sprintf("[%d]", fld.Size)
	}
	return t
}

// findVar returns the hists, and in each the index of the variable, that
// reference r from h may name: h's own variable, else those of every
// other hist of the session (for a qualified reference, of that event).
func (s *Session) findVar(h *sessHist, r parse.HistRef) ([]*sessHist, []int) {
	var hs []*sessHist
	var vs []int
	look := func(c *sessHist) {
		for i, v := range c.vars {
			if v.name == r.Var {
				hs, vs = append(hs, c), append(vs, i)
			}
		}
	}
	if r.System != "" {
		for _, c := range s.byEvent[r.System+":"+r.Event] {
			look(c)
		}
		return hs, vs
	}
	look(h)
	if len(hs) > 0 {
		return hs, vs
	}
	for _, c := range s.hists {
		if c != h {
			look(c)
		}
	}
	return hs, vs
}

// ref binds reference f of h and returns its index in h.refs.
func (s *Session) ref(h *sessHist, f parse.HistField, readOnce bool) (int, error) {
	spec := h.spec
	ts, vs := s.findVar(h, *f.Ref)
	switch {
	case len(ts) == 0:
		e := spec.Errorf(f.Off, f.End, "couldn't find variable")
		if f.Ref.System != "" && len(s.byEvent[f.Ref.System+":"+f.Ref.Event]) == 0 {
			return 0, e.WithHint("no hist of the session is on %s:%s", f.Ref.System, f.Ref.Event)
		}
		return 0, e.WithHint("no hist of the session defines %s=...", f.Ref.Var)
	case len(ts) > 1:
		var names []string
		for _, t := range ts {
			if n := strings.Replace(t.fm.FullName(), ":", ".", 1) + ".$" + f.Ref.Var; !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		return 0, spec.Errorf(f.Off, f.End, "variable name not unique, need to use fully qualified name (subsys.event.var) for variable").
			WithHint("one of %s", strings.Join(names, ", "))
	}
	t, v := ts[0], vs[0]
	if t != h {
		if why := keysDiffer(h.run, t.run); why != "" {
			return 0, spec.Errorf(f.Off, f.End, "the keys of %s's hist do not match this hist's: %s", t.fm.FullName(), why).
				WithHint("a reference reads the entry of the same key values, in key order: give both hists keys of the same kinds and sizes")
		}
	}
	h.refs = append(h.refs, sessRef{h: t, v: v, readOnce: readOnce, self: t == h})
	return len(h.refs) - 1, nil
}

// keysDiffer says why a's keys cannot look up b's entries, or "": the
// kernel looks up the bytes of a's key in b's table.
func keysDiffer(a, b *fileRun) string {
	if len(a.keys) != len(b.keys) {
		return fmt.Sprintf("%d keys against %d", len(a.keys), len(b.keys))
	}
	for i := range a.keys {
		ka, kb := &a.keys[i], &b.keys[i]
		if ka.str != kb.str || ka.size != kb.size {
			return fmt.Sprintf("key %d is %s against %s", i+1, keyWhat(ka), keyWhat(kb))
		}
	}
	return ""
}

func keyWhat(k *fileKey) string {
	if k.str {
		return "a string (" + k.key.Spec.Name + ")"
	}
	return "a number (" + k.key.Spec.Name + ")"
}

// bindAction resolves an action of h: the variable it watches, the
// synthetic event it emits and its params, the fields it saves.
func (s *Session) bindAction(h *sessHist, a *parse.HistAction) error {
	spec := h.spec
	act := sessAction{a: a, track: -1}
	switch a.Handler {
	case parse.OnMatch:
		ev := a.System + ":" + a.Event
		found := false
		for _, t := range s.byEvent[ev] {
			found = found || (!t.hidden && len(t.vars) > 0)
		}
		if !found {
			off := strings.Index(spec.Src[a.Off:a.End], "(") + a.Off + 1
			return spec.Errorf(off, off+len(a.System)+1+len(a.Event), "matching event histogram not found").
				WithHint("onmatch names the event whose hist sets the variables: give -e %s a hist with them", ev)
		}
	default:
		varOff := a.VarOff // the '$' of the variable
		if spec.Src[varOff] != '$' {
			varOff--
		}
		for i, v := range h.vars {
			if v.name == a.Var {
				act.track = i
			}
		}
		if act.track < 0 {
			return spec.Errorf(varOff, varOff+1+len(a.Var), "couldn't find onmax or onchange variable").
				WithHint("%s watches a variable of this hist: define %s=EXPR in it", a.Handler, a.Var)
		}
		// The kernel reads the variable through a reference of its own.
		h.refs = append(h.refs, sessRef{h: h, v: act.track, self: true})
		if t := h.vars[act.track].typ; t.str || t.stack {
			return spec.Errorf(varOff, varOff+1+len(a.Var), "%s of a string or stack variable: not supported", a.Handler).
				WithHint("watch a number")
		}
	}
	switch a.Kind {
	case parse.ActSave:
		for _, p := range a.Params {
			sp, err := s.param(h, a, p)
			if err != nil {
				return err
			}
			if sp.ref >= 0 || sp.field == nil {
				return spec.Errorf(p.Off, p.End, "couldn't find field").
					WithHint("save() saves fields of %s", h.fm.FullName())
			}
			h.saves = append(h.saves, sp)
		}
	case parse.ActTrace:
		syn := s.synths[a.Synth]
		if syn == nil {
			return spec.Errorf(a.SynthOff, a.SynthOff+len(a.Synth), "couldn't find synthetic event").
				WithHint("define it with --synth '%s TYPE FIELD[; TYPE FIELD]...'", a.Synth)
		}
		act.synth = syn
		if len(a.Params) != len(syn.def.Fields) {
			return spec.Errorf(a.Off, a.End, "param count doesn't match synthetic event field count").
				WithHint("%s has %d fields (%s), the action gives %d", a.Synth, len(syn.def.Fields), syn.def.String(), len(a.Params))
		}
		for i, p := range a.Params {
			sp, err := s.param(h, a, p)
			if err != nil {
				return err
			}
			t := sp.typ
			if sp.ref < 0 && sp.field != nil {
				// A field of the hist's own event becomes the kernel's
				// target field variable, whose type it checks as
				// unsigned (create_var sets no sign).
				t.signed = false
			}
			if f := syn.def.Fields[i]; !typeFits(f, t) {
				return spec.Errorf(p.Off, p.End, "param type doesn't match synthetic event field type").
					WithHint("%s is %s, field %s of %s is %s", p.Text, sp.typ.name, f.Name, a.Synth, f.Type)
			}
			act.params = append(act.params, sp)
		}
	}
	h.actions = append(h.actions, act)
	return nil
}

// typeFits is the kernel's rule (check_synth_field): a dynamic string
// field takes any string; else the same type name, or the same size and,
// for numbers, signedness.
func typeFits(f parse.SynthField, t valType) bool {
	if t.stack || f.Kind == parse.SynthStack {
		return t.stack && f.Kind == parse.SynthStack
	}
	if t.str != (f.Kind == parse.SynthString || f.Kind == parse.SynthDynString) {
		return false
	}
	if t.str && f.Kind == parse.SynthDynString {
		return true
	}
	if f.Type == t.name {
		return true
	}
	return f.Size == t.size && (t.str || f.Signed == t.signed)
}

// param resolves a param of action a of h: a variable reference, a field
// of h's event, or a field of another event, which becomes a field
// variable of a hist made on that event (the kernel's synthetic_FIELD).
func (s *Session) param(h *sessHist, a *parse.HistAction, p parse.HistParam) (sessParam, error) {
	spec := h.spec
	if p.Ref != nil {
		f := parse.HistField{Name: p.Text, Ref: p.Ref, Off: p.Off, End: p.End}
		i, err := s.ref(h, f, false)
		if err != nil {
			return sessParam{}, err
		}
		r := h.refs[i]
		return sessParam{name: p.Text, ref: i, typ: s.typeOf(r.h, r.h.spec.Vars[r.v].Expr)}, nil
	}
	own := p.System == "" || p.System+":"+p.Event == h.fm.FullName()
	if own {
		if fld := h.fm.Field(p.Field); fld != nil {
			if fld.Class != parse.ClassNumeric && !fld.Class.IsString() {
				return sessParam{}, spec.Errorf(p.Off, p.End, "field %q (%s) cannot be a param", p.Field, fldClass(fld))
			}
			return sessParam{name: p.Field, ref: -1, field: fld, typ: fieldType(fld)}, nil
		}
	}
	sys, ev := p.System, p.Event
	if sys == "" {
		if a.Handler != parse.OnMatch {
			return sessParam{}, spec.Errorf(p.Off, p.End, "couldn't find field").
				WithHint("%s has no field %s", h.fm.FullName(), p.Field)
		}
		sys, ev = a.System, a.Event
	}
	t, err := s.fieldVar(h, sys+":"+ev, p)
	if err != nil {
		return sessParam{}, err
	}
	h.refs = append(h.refs, sessRef{h: t, v: 0})
	return sessParam{name: p.Text, ref: len(h.refs) - 1, typ: fieldType(t.fm.Field(p.Field))}, nil
}

// fieldVar returns the hist of event ev that holds field p.Field in its
// variable synthetic_FIELD, keyed as the hist of ev that h matches, made
// if not there yet: the kernel's field variable (grammar §4.5).
func (s *Session) fieldVar(h *sessHist, ev string, p parse.HistParam) (*sessHist, error) {
	spec := h.spec
	var match *sessHist
	for _, t := range s.byEvent[ev] {
		if t.hidden {
			if t.vars[0].name == "synthetic_"+p.Field {
				return t, nil
			}
			continue
		}
		if match == nil && keysDiffer(h.run, t.run) == "" {
			match = t
		}
	}
	if match == nil {
		return nil, spec.Errorf(p.Off, p.End, "matching event histogram not found").
			WithHint("a field of %s is read through a hist on it with keys like this hist's", ev)
	}
	if match.fm.Field(p.Field) == nil {
		return nil, spec.Errorf(p.Off, p.End, "couldn't find field").
			WithHint("%s has no field %s", ev, p.Field)
	}
	var keys []string
	for _, k := range match.spec.Keys {
		keys = append(keys, k.Name)
	}
	src := "hist:keys=" + strings.Join(keys, ",") + ":synthetic_" + p.Field + "=" + p.Field
	if match.spec.FilterText != "" {
		src += " if " + match.spec.FilterText
	}
	fspec, err := parse.ParseHist(spec.SrcName(), src)
	if err != nil {
		return nil, fmt.Errorf("field variable %s of %s: %w", p.Field, ev, err)
	}
	t, err := s.addHist(fspec, match.fm)
	if err != nil {
		return nil, err
	}
	t.hidden = true
	if err := s.bind(t); err != nil {
		return nil, err
	}
	return t, nil
}
