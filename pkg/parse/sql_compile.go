package parse

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// SQLEvents finds the format of an event of a statement: name is "EVENT"
// (any system) or "SYS.EVENT". Its error is the message under the caret.
type SQLEvents func(name string) (*Format, error)

// SQLOptions are sqlhist's options.
type SQLOptions struct {
	Name string // the synthetic event's name (-n); "" is sqlhist's "Anonymous"
	// Salt is the number in the names of the variables the statement
	// creates (__arg_SALT_N, __lat_SALT_N): sqlhist takes its process ID.
	Salt int
	// OnMax (-m) or OnChange (-c) names a field of the synthetic event;
	// the actions then run when it reaches a new maximum or changes,
	// instead of tracing the synthetic event on every match.
	OnMax, OnChange string
	Save            []string // -S: .save(FIELDS), fields of the JOIN event
	Trace           bool     // -T: .trace() then .snapshot()
	Snapshot        bool     // -s: .snapshot()
}

// SQLHist is one hist trigger a statement makes: the text written to
// events/System/Event/trigger.
type SQLHist struct {
	System, Event string
	Trigger       string // "hist:keys=...[ if FILTER]"
}

// SQLPlan is what a statement compiles to: with JOIN, a synthetic event
// (Synth, as dynamic_events takes it) and the hist triggers of the start
// and end events; without JOIN, one hist trigger and no Synth.
type SQLPlan struct {
	Synth string // "s:NAME TYPE FIELD; ...", or ""
	Hists []SQLHist
}

// sqlSide is one event of the statement.
type sqlSide struct {
	tb    SQLTable
	fm    *Format
	sys   string
	name  string
	start bool
}

// sqlField is a field reference bound to its event.
type sqlField struct {
	side  *sqlSide
	field string // the name the kernel is given: "pid", "common_timestamp.usecs"
	n     SQLName
	f     *Field // nil for common_timestamp[.usecs] and COMM
}

type sqlCompiler struct {
	st         *SQLStmt
	o          SQLOptions
	start, end *sqlSide
	cnt        int
	hashed     map[string]string
	startVars  []string
	endVars    []string
	fields     []string // the synthetic event's fields, "TYPE NAME;"
	args       []string // the synthetic event's arguments, "$VAR"
	named      map[string]bool
	startKeys  []string
	endKeys    []string
	startWhere string
	endWhere   string
}

func (c *sqlCompiler) errorf(n SQLName, format string, args ...any) *Error {
	return Errorf("sql", c.st.Src, n.Off, n.End, format, args...)
}

// CompileSQL binds a statement to its events' formats and returns what
// sqlhist gives the kernel for it, names and order as libtracefs makes
// them. Errors are *Error with the caret in the statement.
func CompileSQL(st *SQLStmt, events SQLEvents, o SQLOptions) (*SQLPlan, error) {
	c := &sqlCompiler{st: st, o: o, hashed: map[string]string{}, named: map[string]bool{}}
	if c.o.Name == "" {
		c.o.Name = "Anonymous"
	}
	var err *Error
	if c.start, err = c.side(st.From, events, true); err != nil {
		return nil, err
	}
	if st.Join == nil {
		return c.histOnly()
	}
	if c.end, err = c.side(*st.Join, events, false); err != nil {
		return nil, err
	}
	if c.start.tb.Alias.Text != "" && strings.EqualFold(c.start.tb.Alias.Text, c.end.tb.Alias.Text) {
		return nil, c.errorf(c.end.tb.Alias, "alias %q is the FROM event's too", c.end.tb.Alias.Text)
	}
	if err := c.matches(); err != nil {
		return nil, err
	}
	for _, sel := range st.Selects {
		if err := c.selection(sel); err != nil {
			return nil, err
		}
	}
	if err := c.where(); err != nil {
		return nil, err
	}
	actions, err := c.actions()
	if err != nil {
		return nil, err
	}
	synth := "s:" + c.o.Name + " " + strings.Join(c.fields, " ")
	startHist := sqlHistText(c.startKeys, c.startVars) + sqlIf(c.startWhere)
	endHist := sqlHistText(c.endKeys, c.endVars) + actions + sqlIf(c.endWhere)
	return &SQLPlan{Synth: synth, Hists: []SQLHist{
		{System: c.start.sys, Event: c.start.name, Trigger: startHist},
		{System: c.end.sys, Event: c.end.name, Trigger: endHist},
	}}, nil
}

func sqlHistText(keys, vars []string) string {
	s := "hist:keys=" + strings.Join(keys, ",")
	if len(vars) > 0 {
		s += ":" + strings.Join(vars, ",")
	}
	return s
}

func sqlIf(filter string) string {
	if filter == "" {
		return ""
	}
	return " if " + filter
}

func (c *sqlCompiler) side(tb SQLTable, events SQLEvents, start bool) (*sqlSide, *Error) {
	fm, err := events(tb.Event.Text)
	if err != nil {
		return nil, c.errorf(tb.Event, "%s", err.Error())
	}
	return &sqlSide{tb: tb, fm: fm, sys: fm.System, name: fm.Name, start: start}, nil
}

// resolve binds a field reference to its event: ALIAS.FIELD,
// EVENT.FIELD or SYS.EVENT.FIELD, and a bare FIELD without JOIN.
func (c *sqlCompiler) resolve(n SQLName, inWhere bool) (*sqlField, *Error) {
	sides := []*sqlSide{c.start}
	if c.end != nil {
		sides = append(sides, c.end)
	}
	var side *sqlSide
	rest := ""
	for _, s := range sides {
		for _, p := range []string{s.tb.Alias.Text, s.name, s.sys + "." + s.name} {
			if p != "" && strings.HasPrefix(n.Text, p+".") && len(n.Text) > len(p)+1 {
				side, rest = s, n.Text[len(p)+1:]
				break
			}
		}
		if side != nil {
			break
		}
	}
	if side == nil {
		if c.end != nil {
			return nil, c.errorf(n, "'%s' is not a field of either event", n.Text).
				WithHint("name a field by its event's alias, event or system.event: %s", c.prefixes())
		}
		side, rest = c.start, n.Text
	}
	switch rest {
	case "TIMESTAMP":
		rest = "common_timestamp"
	case "TIMESTAMP_USECS":
		rest = "common_timestamp.usecs"
	}
	fld := &sqlField{side: side, field: rest, n: n}
	switch {
	case rest == "common_timestamp" || rest == "common_timestamp.usecs":
		return fld, nil
	case inWhere && (rest == "COMM" || rest == "comm") && side.fm.Field(rest) == nil:
		return fld, nil
	}
	fld.f = side.fm.Field(rest)
	if fld.f == nil {
		e := c.errorf(n, "Field '%s' not part of event %s", rest, side.name)
		var names []string
		for _, f := range side.fm.Fields {
			names = append(names, f.Name)
		}
		names = append(names, "TIMESTAMP", "TIMESTAMP_USECS")
		if near := Nearest(rest, names); near != "" {
			e.WithHint("did you mean %q?", near)
		}
		return nil, e
	}
	return fld, nil
}

func (c *sqlCompiler) prefixes() string {
	var ps []string
	for _, s := range []*sqlSide{c.start, c.end} {
		if s.tb.Alias.Text != "" {
			ps = append(ps, s.tb.Alias.Text+".FIELD")
		} else {
			ps = append(ps, s.name+".FIELD")
		}
	}
	return strings.Join(ps, " or ")
}

// sqlSized is a field's size and class, what libtracefs compares to tell
// whether two fields can be matched or subtracted.
func (f *sqlField) shape() (int, FieldClass, bool) {
	if f.f == nil {
		return 8, ClassNumeric, false
	}
	return f.f.Size, f.f.Class, f.f.Signed
}

func compatible(a, b *sqlField) bool {
	as, ac, asg := a.shape()
	bs, bc, bsg := b.shape()
	return as == bs && ac == bc && asg == bsg
}

func (c *sqlCompiler) matches() *Error {
	for _, m := range c.st.On {
		l, err := c.resolve(m.Left, false)
		if err != nil {
			return err
		}
		r, err := c.resolve(m.Right, false)
		if err != nil {
			return err
		}
		if l.side == r.side {
			bad := m.Right
			if !l.side.start {
				bad = m.Left
			}
			return c.errorf(bad, "'%s' and '%s' must be a field for each event: '%s' and '%s'", m.Left.Text, m.Right.Text, c.end.tb.Event.Text, c.start.tb.Event.Text)
		}
		if !l.side.start {
			l, r = r, l
		}
		if !compatible(l, r) {
			return c.errorf(m.Left, "Field '%s' is not compatible to match field '%s'", m.Left.Text, m.Right.Text)
		}
		c.startKeys = append(c.startKeys, l.field)
		c.endKeys = append(c.endKeys, r.field)
	}
	return nil
}

// newName is libtracefs's unique variable name: __NAME_SALT_N.
func (c *sqlCompiler) newName(name string) string {
	c.cnt++
	return "__" + name + "_" + strconv.Itoa(c.o.Salt) + "_" + strconv.Itoa(c.cnt)
}

// hashName is newName once per name.
func (c *sqlCompiler) hashName(name string) string {
	if h, ok := c.hashed[name]; ok {
		return h
	}
	h := c.newName(name)
	c.hashed[name] = h
	return h
}

// synthType is the synthetic field libtracefs declares for an event's
// field: arrays keep their element type, pid_t, gfp_t and bool their own,
// other numbers their size and sign.
func synthType(f *sqlField, name string) (string, *Error) {
	if f.f == nil {
		return "u64 " + name + ";", nil
	}
	t := f.f.Type
	switch {
	case f.f.Class == ClassString || f.f.Class == ClassDataLoc || f.f.Class == ClassRelLoc || f.f.Class == ClassArray:
		elem, _, _ := strings.Cut(t, "[")
		elem = strings.TrimPrefix(strings.TrimPrefix(elem, "__data_loc "), "__rel_loc ")
		if f.f.Class == ClassString {
			return elem + " " + name + "[" + strconv.Itoa(f.f.Size) + "];", nil
		}
		return elem + " " + name + "[];", nil
	case t == "pid_t" || t == "gfp_t" || t == "bool":
		return t + " " + name + ";", nil
	}
	var st string
	switch f.f.Size {
	case 1:
		st = "char"
		if !f.f.Signed {
			st = "unsigned char"
		}
	case 2, 4, 8:
		st = "u"
		if f.f.Signed {
			st = "s"
		}
		st += strconv.Itoa(f.f.Size * 8)
	default:
		return "", &Error{Msg: fmt.Sprintf("field '%s' of %d bytes cannot be a synthetic field", f.field, f.f.Size)}
	}
	return st + " " + name + ";", nil
}

func (c *sqlCompiler) addSynth(f *sqlField, name, v string, at SQLName) *Error {
	decl, err := synthType(f, name)
	if err != nil {
		return c.errorf(at, "%s", err.Msg)
	}
	if !IsGoodName(name) || strings.HasPrefix(name, "common_") {
		return c.errorf(at, "'%s' cannot name a synthetic field", name).WithHint("name it with AS NAME")
	}
	if c.named[name] {
		return c.errorf(at, "the synthetic event has a field '%s' already", name).WithHint("name this one with AS NAME")
	}
	c.named[name] = true
	c.fields = append(c.fields, decl)
	c.args = append(c.args, "$"+v)
	return nil
}

func (c *sqlCompiler) selection(sel *SQLSelect) *Error {
	if sel.Cast.Text != "" {
		return c.errorf(sel.Cast, "CAST makes a histogram key: it is for a statement without JOIN").
			WithHint("the synthetic event's fields are plain: use gtrace hist on it for keys and modifiers")
	}
	whole := SQLName{Text: c.st.Src[sel.Off:sel.End], Off: sel.Off, End: sel.End}
	if sel.Op == 0 && (sel.Left.Text == "TIMESTAMP_DELTA" || sel.Left.Text == "TIMESTAMP_DELTA_USECS") {
		ts := "TIMESTAMP"
		if sel.Left.Text == "TIMESTAMP_DELTA_USECS" {
			ts = "TIMESTAMP_USECS"
		}
		l := &sqlField{side: c.end, field: map[string]string{"TIMESTAMP": "common_timestamp", "TIMESTAMP_USECS": "common_timestamp.usecs"}[ts], n: sel.Left}
		r := &sqlField{side: c.start, field: l.field, n: sel.Left}
		return c.compare(sel, whole, l, r)
	}
	l, err := c.resolve(sel.Left, false)
	if err != nil {
		return err
	}
	if sel.Op != 0 {
		r, err := c.resolve(sel.Right, false)
		if err != nil {
			return err
		}
		return c.compare(sel, whole, l, r)
	}
	if l.side.start {
		name := sel.Label.Text
		if name == "" {
			name = l.field
		}
		v := c.hashName(name)
		arg := c.newName("arg")
		c.startVars = append(c.startVars, arg+"="+l.field)
		c.endVars = append(c.endVars, v+"=$"+arg)
		return c.addSynth(l, name, v, sel.Left)
	}
	name, v := sel.Label.Text, ""
	switch {
	case name == "":
		v = c.newName("arg")
		name = l.field
	case strings.HasPrefix(name, "__arg"):
		v = name
	default:
		v = c.hashName(name)
	}
	c.endVars = append(c.endVars, v+"="+l.field)
	return c.addSynth(l, name, v, sel.Left)
}

// compare is a selection (A - B) or (A + B) of a field of each event.
func (c *sqlCompiler) compare(sel *SQLSelect, whole SQLName, l, r *sqlField) *Error {
	if sel.Label.Text == "" {
		return c.errorf(whole, "Field calculations must be labeled 'AS name'")
	}
	if l.side == r.side {
		return c.errorf(sel.Right, "'%s' and '%s' must be a field for each event", sel.Left.Text, sel.Right.Text)
	}
	start, end := l, r
	if !l.side.start {
		start, end = r, l
	}
	if !compatible(start, end) {
		return c.errorf(sel.Left, "'%s' is not compatible to compare with '%s'", sel.Left.Text, sel.Right.Text)
	}
	if start.f != nil && start.f.Class != ClassNumeric {
		return c.errorf(sel.Left, "'%s' is not a number: calculations are on numbers", sel.Left.Text)
	}
	arg := c.newName("arg")
	c.startVars = append(c.startVars, arg+"="+start.field)
	var expr string
	switch {
	case sel.Op == '+':
		expr = end.field + "+$" + arg
	case l == start:
		expr = "$" + arg + "-" + end.field
	default:
		expr = end.field + "-$" + arg
	}
	v := c.hashName(sel.Label.Text)
	c.endVars = append(c.endVars, v+"="+expr)
	return c.addSynth(start, sel.Label.Text, v, sel.Label)
}

// where builds each event's filter from the top-level conditions, each
// of which is of one event.
func (c *sqlCompiler) where() *Error {
	for _, cond := range c.st.Where {
		var side *sqlSide
		var b strings.Builder
		if err := c.cond(cond, &side, &b); err != nil {
			return err
		}
		dst := &c.startWhere
		if !side.start {
			dst = &c.endWhere
		}
		if *dst == "" {
			*dst = b.String()
		} else {
			*dst += "&&(" + b.String() + ")"
		}
	}
	return nil
}

func (c *sqlCompiler) cond(x SQLCond, side **sqlSide, b *strings.Builder) *Error {
	switch x := x.(type) {
	case *SQLLogic:
		if err := c.cond(x.Left, side, b); err != nil {
			return err
		}
		b.WriteString(x.Op)
		return c.cond(x.Right, side, b)
	case *SQLGroup:
		if x.Not {
			b.WriteString("!")
		}
		b.WriteString("(")
		if err := c.cond(x.X, side, b); err != nil {
			return err
		}
		b.WriteString(")")
		return nil
	case *SQLCompare:
		f, err := c.resolve(x.Field, true)
		if err != nil {
			return err
		}
		if *side == nil {
			*side = f.side
		} else if *side != f.side {
			return c.errorf(x.Field, "'%s' is of %s, and can not be grouped or '||' together with a field of %s", x.Field.Text, f.side.name, (*side).name).
				WithHint("all filters between '&&' must be for the same event")
		}
		isStr := f.f != nil && f.f.Class != ClassNumeric && f.f.Class != ClassArray || f.field == "COMM" || f.field == "comm"
		switch {
		case f.f != nil && f.f.Class == ClassArray:
			return c.errorf(x.Field, "Field '%s' is an array and cannot be compared", f.field)
		case isStr && !x.String:
			return c.errorf(x.Value, "Field '%s' is a string and is compared with a \"string\"", f.field)
		case isStr && x.Op != "==" && x.Op != "!=" && x.Op != "~":
			return c.errorf(x.Field, "Field '%s' is a string: compare it with ==, != or ~", f.field)
		case !isStr && x.String:
			return c.errorf(x.Value, "Field '%s' is a number and is compared with a number", f.field)
		}
		b.WriteString(f.field)
		switch x.Op {
		case "~":
			b.WriteString("~")
		default:
			b.WriteString(" " + x.Op + " ")
		}
		if x.String {
			b.WriteString(x.Value.Text)
		} else {
			b.WriteString(strconv.FormatInt(x.Num, 10))
		}
	}
	return nil
}

// actions is the end hist's actions: onmatch(start).trace(synth,...) by
// default; with OnMax or OnChange, save, trace and snapshot in that
// order, as sqlhist adds them.
func (c *sqlCompiler) actions() (string, *Error) {
	trace := ".trace(" + c.o.Name + "," + strings.Join(c.args, ",") + ")"
	v := c.o.OnMax
	handler := "onmax"
	if v == "" {
		v, handler = c.o.OnChange, "onchange"
	}
	if v == "" {
		return ":onmatch(" + c.start.sys + "." + c.start.name + ")" + trace, nil
	}
	hv := c.findVar(v)
	if hv == "" {
		return "", &Error{Name: "sql", Src: c.st.Src, Msg: fmt.Sprintf("'%s' is not a variable", v), Hint: "-m and -c take a field of the synthetic event: " + strings.Join(c.synthNames(), ", ")}
	}
	h := ":" + handler + "($" + hv + ")"
	var s string
	if len(c.o.Save) > 0 {
		for _, f := range c.o.Save {
			if c.end.fm.Field(f) == nil && f != "common_timestamp" {
				return "", &Error{Name: "sql", Src: c.st.Src, Msg: fmt.Sprintf("-S: Field '%s' not part of event %s", f, c.end.name)}
			}
		}
		s += h + ".save(" + strings.Join(c.o.Save, ",") + ")"
	}
	if c.o.Trace {
		s += h + trace
	}
	if c.o.Trace || c.o.Snapshot {
		s += h + ".snapshot()"
	}
	return s, nil
}

// findVar is the end event's variable for v: v itself, or its hashed
// __v_SALT_N.
func (c *sqlCompiler) findVar(v string) string {
	v = strings.TrimPrefix(v, "$")
	for _, ev := range c.endVars {
		name, _, _ := strings.Cut(ev, "=")
		if name == v || c.hashed[v] == name {
			return name
		}
	}
	return ""
}

func (c *sqlCompiler) synthNames() []string {
	var ns []string
	for k := range c.hashed {
		if c.findVar(k) != "" {
			ns = append(ns, k)
		}
	}
	sort.Strings(ns)
	return ns
}

// sqlCasts are CAST's types and the key modifier each makes.
var sqlCasts = map[string]string{"hex": ".hex", "sym": ".sym", "sym-offset": ".sym-offset", "syscall": ".syscall", "execname": ".execname", "comm": ".execname", "log": ".log2", "log2": ".log2"}

// histOnly is a statement without JOIN: a hist trigger of the FROM
// event, its selections the keys, CAST(F AS _COUNTER_) its values.
func (c *sqlCompiler) histOnly() (*SQLPlan, error) {
	if c.o.OnMax != "" || c.o.OnChange != "" || c.o.Trace || c.o.Snapshot || len(c.o.Save) > 0 {
		return nil, &Error{Name: "sql", Src: c.st.Src, Msg: "-m, -c, -s, -S and -T act on a synthetic event: they need a statement with JOIN"}
	}
	var keys, vals []string
	for _, sel := range c.st.Selects {
		if sel.Op != 0 {
			return nil, c.errorf(sel.Left, "Simple SQL (without JOIN/ON) do not allow comparisons")
		}
		if sel.Label.Text != "" {
			return nil, c.errorf(sel.Label, "a histogram's keys are not named: AS is for a statement with JOIN")
		}
		f, err := c.resolve(sel.Left, false)
		if err != nil {
			return nil, err
		}
		if sel.Cast.Text == "" {
			keys = append(keys, f.field)
			continue
		}
		isStr := f.f != nil && f.f.Class != ClassNumeric
		t := strings.ToLower(sel.Cast.Text)
		switch {
		case t == "_counter_" || t == "__counter__":
			if isStr {
				return nil, c.errorf(sel.Left, "'%s' is a string, and counters may only be used with numbers", f.field)
			}
			vals = append(vals, f.field)
			continue
		case (t == "execname" || t == "comm") && f.field != "common_pid":
			return nil, c.errorf(sel.Cast, "'%s' is only allowed for common_pid", t)
		case strings.HasPrefix(t, "buckets="):
			if isStr {
				return nil, c.errorf(sel.Left, "Field '%s' cast to '%s' but is of type string", f.field, t)
			}
			keys = append(keys, f.field+".buckets="+strings.TrimPrefix(t, "buckets="))
			continue
		}
		mod, ok := sqlCasts[t]
		if !ok {
			return nil, c.errorf(sel.Cast, "Cast of '%s' to unknown type '%s'", sel.Left.Text, t).
				WithHint("the types are HEX, SYM, SYM-OFFSET, SYSCALL, EXECNAME (or COMM), LOG2 (or LOG), BUCKETS=N and _COUNTER_")
		}
		if isStr && t != "execname" && t != "comm" {
			return nil, c.errorf(sel.Left, "Field '%s' cast to '%s' but is of type string", f.field, t)
		}
		keys = append(keys, f.field+mod)
	}
	if len(keys) == 0 {
		return nil, c.errorf(c.st.Selects[0].Cast, "Not all SELECT items can be of type _COUNTER_")
	}
	if err := c.where(); err != nil {
		return nil, err
	}
	h := "hist:keys=" + strings.Join(keys, ",")
	if len(vals) > 0 {
		h += ":vals=" + strings.Join(vals, ",")
	}
	return &SQLPlan{Hists: []SQLHist{{System: c.start.sys, Event: c.start.name, Trigger: h + sqlIf(c.startWhere)}}}, nil
}

// Commands returns the shell commands that make the plan in the kernel
// whose tracefs is at root, as sqlhist prints them.
func (p *SQLPlan) Commands(root string) string {
	var b strings.Builder
	if p.Synth == "" {
		for _, h := range p.Hists {
			fmt.Fprintf(&b, "echo '%s' > %s/events/%s/%s/trigger\n", h.Trigger, root, h.System, h.Event)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "echo '%s' >> %s/dynamic_events\n", p.Synth, root)
	for _, h := range p.Hists {
		fmt.Fprintf(&b, "echo '%s' >> %s/events/%s/%s/trigger\n", h.Trigger, root, h.System, h.Event)
	}
	return b.String()
}
