package hist

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// The engine of a session: the records of the session's events, one at a
// time in time stamp order, each updating the hists on its event as the
// kernel's event_hist_trigger does (grammar §4.4-4.5, §5):
//
//  1. the filter; the key;
//  2. the references to other hists' variables, read from their entries
//     of the same key: one that has no entry, or whose variable is unset,
//     skips the event (no hit, no drop); a reference inside an expression
//     is read once, and unset by the read;
//  3. the entry (a new key in a full table: Dropped), its hitcount, sums
//     and variables;
//  4. the references to the hist's own variables: one unset runs no
//     action; else the actions in order: onmatch emits its synthetic
//     event, whose own hists run at once on it; onmax and onchange compare
//     the watched variable with the entry's tracked value (0 at first) and
//     on a new max, or a change, keep it and save(), snapshot() or emit.

// sessEntry is an entry of a session's hist.
type sessEntry struct {
	keys   []KeyValue
	comm   string
	hits   uint64
	sums   []uint64
	vars   []sessVal
	tracks []uint64  // per action: the tracked value of onmax, onchange
	saved  []sessVal // the save() fields, when the save action last fired
}

// Add runs the hists of the session on one raw record of an event: rec as
// the ring buffer holds it, cpu the CPU it happened on, comm the name of
// its task and ts its time stamp in nanoseconds (common_timestamp).
// Records of events without hists in the session, and of the session's
// synthetic events (which only its actions emit), are not counted.
func (s *Session) Add(rec []byte, cpu int, comm string, ts uint64) {
	if len(rec) < 8 {
		return
	}
	id := int(binary.LittleEndian.Uint16(rec))
	for _, h := range s.byID[id] {
		if h.fm.System == parse.SynthSystem && s.synths[h.fm.Name] != nil {
			continue
		}
		s.event(h, rec, cpu, recordPID(rec), comm, ts)
	}
}

// event runs hist h on record d.
func (s *Session) event(h *sessHist, d []byte, cpu int, pid int32, comm string, ts uint64) {
	r := h.run
	if r.filter != nil && !eval.Match(r.filter, d, eval.Context{PID: -1, CPU: cpu, Comm: comm}) {
		return
	}
	r.fillKey(h.key, d, cpu, pid, comm, ts)
	k := string(h.key)
	if h.refVals == nil {
		h.refVals = make([]sessVal, len(h.refs))
	}
	for i, ref := range h.refs {
		if ref.self {
			continue
		}
		te := ref.h.entries[k]
		if te == nil || !te.vars[ref.v].set {
			return
		}
		h.refVals[i] = te.vars[ref.v]
		if ref.readOnce {
			te.vars[ref.v].set = false
		}
	}
	e := h.entries[k]
	if e == nil {
		if len(h.order) >= r.plan.Size {
			h.dropped++
			return
		}
		e = &sessEntry{
			keys:   h.decodeKeys(h.key),
			sums:   make([]uint64, len(r.plan.Vals)),
			vars:   make([]sessVal, len(h.vars)),
			tracks: make([]uint64, len(h.actions)),
		}
		if r.saveComm {
			e.comm = comm
		}
		h.entries[k] = e
		h.order = append(h.order, e)
	}
	e.hits++
	for i, x := range h.vals {
		if x != nil {
			e.sums[i] += h.eval(x, e, d, cpu, pid, ts)
		} else {
			e.sums[i] += r.vals[i].value(d, cpu, pid, ts)
		}
	}
	for i := range h.vars {
		e.vars[i] = h.value(h.vars[i].expr, e, d, cpu, pid, comm, ts)
	}
	for i, ref := range h.refs {
		if !ref.self {
			continue
		}
		if !e.vars[ref.v].set {
			return
		}
		h.refVals[i] = e.vars[ref.v]
	}
	for i := range h.actions {
		s.act(h, i, e, d, cpu, pid, comm, ts)
	}
}

// act runs action i of h for entry e, updated by record d.
func (s *Session) act(h *sessHist, i int, e *sessEntry, d []byte, cpu int, pid int32, comm string, ts uint64) {
	a := &h.actions[i]
	if a.a.Handler != parse.OnMatch {
		v := e.vars[a.track].num
		if a.a.Handler == parse.OnMax && v <= e.tracks[i] || a.a.Handler == parse.OnChange && v == e.tracks[i] {
			return
		}
		e.tracks[i] = v
	}
	switch a.a.Kind {
	case parse.ActSave:
		e.saved = e.saved[:0]
		for _, p := range h.saves {
			e.saved = append(e.saved, h.param(p, d, comm))
		}
	case parse.ActSnapshot:
		v := e.tracks[i]
		if a.a.Handler == parse.OnMax && v <= h.snapVal || a.a.Handler == parse.OnChange && v == h.snapVal {
			return
		}
		h.snapVal = v
		h.snap = &Snapshot{Handler: fmt.Sprintf("%s($%s)", a.a.Handler, a.a.Var), Value: v, Keys: e.keys, Comm: e.comm}
	case parse.ActTrace:
		s.emit(a, h, d, cpu, pid, comm, ts)
	}
}

// emit makes the record of action a's synthetic event from record d of
// h's event and runs the hists of the synthetic event on it.
func (s *Session) emit(a *sessAction, h *sessHist, d []byte, cpu int, pid int32, comm string, ts uint64) {
	if s.depth >= maxSynthDepth {
		return
	}
	syn := a.synth
	size := parse.CommonSize
	for _, f := range syn.def.Fields {
		if f.Kind == parse.SynthString {
			size += 256
		} else {
			size += 8
		}
	}
	rec := make([]byte, size, size+64)
	binary.LittleEndian.PutUint16(rec, uint16(syn.fm.ID))
	binary.LittleEndian.PutUint32(rec[4:], uint32(pid))
	for i, f := range syn.def.Fields {
		fld := syn.fm.Field(f.Name)
		v := h.param(a.params[i], d, comm)
		switch f.Kind {
		case parse.SynthNumber:
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], v.num)
			copy(rec[fld.Offset:fld.Offset+fld.Size], b[:])
		case parse.SynthString:
			copy(rec[fld.Offset:fld.Offset+f.Size-1], v.str)
		case parse.SynthDynString:
			str := v.str
			if len(str) > 255 {
				str = str[:255]
			}
			binary.LittleEndian.PutUint32(rec[fld.Offset:], uint32(len(str)+1)<<16|uint32(len(rec)))
			rec = append(append(rec, str...), 0)
		}
	}
	s.depth++
	for _, t := range s.byEvent[syn.fm.FullName()] {
		s.event(t, rec, cpu, pid, comm, ts)
	}
	s.depth--
}

// param reads p for record d: a reference's value, as resolved for the
// event, or the field of d.
func (h *sessHist) param(p sessParam, d []byte, comm string) sessVal {
	if p.ref >= 0 {
		return h.refVals[p.ref]
	}
	if p.field.Class.IsString() {
		return sessVal{set: true, str: string(p.field.Bytes(d))}
	}
	return sessVal{set: true, num: p.field.Value(d)}
}

// value computes a variable's value for record d: a string for a string
// field, comm or a reference to a string variable, else a number.
func (h *sessHist) value(x *sexpr, e *sessEntry, d []byte, cpu int, pid int32, comm string, ts uint64) sessVal {
	switch {
	case x.op != 0:
	case x.kind == leafComm:
		return sessVal{set: true, str: comm}
	case x.kind == leafField && x.field.Class.IsString():
		return sessVal{set: true, str: string(x.field.Bytes(d))}
	case x.kind == leafRef:
		if r := h.refs[x.ref]; r.self {
			return e.vars[r.v]
		}
		return h.refVals[x.ref]
	}
	return sessVal{set: true, num: h.eval(x, e, d, cpu, pid, ts)}
}

// eval computes a number as evalExpr does, references read from the
// event's resolved values (those of the hist itself from the entry).
func (h *sessHist) eval(x *sexpr, e *sessEntry, d []byte, cpu int, pid int32, ts uint64) uint64 {
	switch x.op {
	case 0:
		switch x.kind {
		case leafField:
			return x.field.Value(d)
		case leafPID:
			return uint64(int64(pid))
		case leafCPU:
			return uint64(cpu)
		case leafTime:
			if x.usecs {
				return (ts + 500) / 1000
			}
			return ts
		case leafRef:
			if r := h.refs[x.ref]; r.self {
				return e.vars[r.v].num
			}
			return h.refVals[x.ref].num
		}
		return x.c
	case 'n':
		return -h.eval(x.l, e, d, cpu, pid, ts)
	}
	return binaryOp(x.op, x.signed, h.eval(x.l, e, d, cpu, pid, ts), h.eval(x.r, e, d, cpu, pid, ts))
}

// decodeKeys decodes key bytes as the table's entries show them.
func (h *sessHist) decodeKeys(key []byte) []KeyValue {
	l := h.run.plan.Layout
	kv := make([]KeyValue, len(l.Keys))
	for i, sl := range l.Keys {
		kv[i] = h.run.plan.Keys[i].decode(key[sl.Off : sl.Off+sl.Size])
	}
	return kv
}

// Tables returns the session's hists as the kernel's hist files show
// them, sorted, with their trigger descriptions: the events in the order
// their first hist was given, and for each event its hists in the order
// given, then the hists the session made for field variables.
func (s *Session) Tables() ([]*Table, []string) {
	return s.tablesOf(func(h *sessHist) *Table {
		t := h.table()
		t.Lost = s.lost
		return t
	})
}

// tablesOf returns the table of each hist in the order of Tables, as
// table gives it, and the trigger descriptions.
func (s *Session) tablesOf(table func(h *sessHist) *Table) ([]*Table, []string) {
	var tables []*Table
	var infos []string
	all := s.infos()
	for _, ev := range s.events {
		for _, hidden := range []bool{false, true} {
			for _, h := range s.byEvent[ev] {
				if h.hidden == hidden {
					tables = append(tables, table(h))
					infos = append(infos, all[h])
				}
			}
		}
	}
	return tables, infos
}

// infos are the trigger descriptions of the hists.
func (s *Session) infos() map[*sessHist]string {
	m := map[*sessHist]string{}
	for _, h := range s.hists {
		m[h] = h.spec.String() + " [active]"
	}
	return m
}

// table returns h's entries as a sorted Table.
func (h *sessHist) table() *Table {
	t := &Table{Plan: h.run.plan, Dropped: h.dropped, Snapshot: h.snap}
	for _, e := range h.order {
		te := Entry{Keys: e.keys, Comm: e.comm, Hitcount: e.hits, Vals: append([]uint64(nil), e.sums...)}
		for i, a := range h.actions {
			if a.a.Handler == parse.OnMatch || a.a.Kind == parse.ActSnapshot {
				continue
			}
			ea := EntryAction{Handler: a.a.Handler, Value: e.tracks[i]}
			for j, p := range h.saves {
				sf := SavedField{Name: p.name, Str: p.typ.str}
				if j < len(e.saved) {
					sf.Set, sf.Num, sf.Text = true, e.saved[j].num, e.saved[j].str
				}
				ea.Saved = append(ea.Saved, sf)
			}
			te.Actions = append(te.Actions, ea)
		}
		t.Entries = append(t.Entries, te)
	}
	t.Sort()
	return t
}

// RunFile runs the session over the records of a trace.dat file's top
// instance, in the order of its merged timeline (by time stamp, ties to
// the lower CPU), in one goroutine: the order of the events is their
// meaning. The task name of a record is the file's saved cmdline of its
// common_pid. o.PIDs, when given, limits the records to those tasks (the
// synthetic events their actions emit follow them); o.Workers is not
// used: the records are read in one goroutine. When ctx is done, it
// stops within a few thousand records, the tables then hold the records
// read so far, and it returns context.Cause(ctx); a damaged file stops
// it with an error naming the damage.
func (s *Session) RunFile(ctx context.Context, f *tracedat.File, o FileOptions) error {
	if err := s.CheckFile(f); err != nil {
		return err
	}
	var pids map[int32]bool
	if len(o.PIDs) > 0 {
		pids = map[int32]bool{}
		for _, pid := range o.PIDs {
			pids[int32(pid)] = true
		}
	}
	w := &fileWorker{r: &fileRun{cmdlines: f.Cmdlines}}
	it := f.Records()
	for n := 1; it.Next(); n++ {
		rec := it.Record()
		if rec.Missed > 0 {
			s.lost += uint64(rec.Missed)
		}
		d := rec.Data
		if len(d) >= 8 && len(s.byID[int(binary.LittleEndian.Uint16(d))]) > 0 {
			pid := recordPID(d)
			if pids == nil || pids[pid] {
				s.Add(d, rec.CPU, w.commOf(pid), rec.TS)
			}
		}
		if n%checkEvery == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return readErr(it.Err())
}

// CheckFile says whether the session can run over the records of f, as
// RunFile does first: a file of the machine's byte order, recorded with
// the clock of the hists that use common_timestamp.
func (s *Session) CheckFile(f *tracedat.File) error {
	if f.BigEndian {
		return errors.New("read records of a big-endian trace.dat file: not supported")
	}
	for _, h := range s.hists {
		spec := h.spec
		if !spec.Timestamp() || spec.EffectiveClock() == f.Clock {
			continue
		}
		if spec.Clock == "" {
			return fmt.Errorf("common_timestamp: the trace.dat file was recorded with clock %s: add :clock=%s to the hist on %s", f.Clock, f.Clock, h.fm.FullName())
		}
		return spec.Errorf(spec.ClockOff, spec.ClockEnd, "the trace.dat file was recorded with clock %s", f.Clock).
			WithHint("common_timestamp over a file is in the file's clock: use clock=%s", f.Clock)
	}
	return nil
}
