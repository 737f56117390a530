package hist

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracingmap"
)

// ErrNoEvent is wrapped by the error of an event name that a trace.dat
// file holds no format for.
var ErrNoEvent = errors.New("no such event in the trace.dat file")

// FileOptions are the parts of a hist over a trace.dat file that are not
// in its spec.
type FileOptions struct {
	// Workers is how many goroutines read CPU streams at once; 0 means
	// GOMAXPROCS. With 1 the records are read in one goroutine, in the
	// order of the file's merged timeline.
	Workers int
	// PIDs, when not empty, counts only the records of these tasks, by
	// their common_pid: a trace.dat file keeps no thread group ids, so
	// for a process with threads that is its main thread (whose id is
	// the process's).
	PIDs []int
}

// commLen is the longest task name the kernel saves (TASK_COMM_LEN - 1).
const commLen = 15

// checkEvery is how many records a worker reads between looks at the
// context and at the other workers.
const checkEvery = 4096

// FileFormat returns the format, stored in f, of the event name: "SYS:EVENT",
// or "EVENT" if only one system has an event of that name.
func FileFormat(f *tracedat.File, name string) (*parse.Format, error) {
	sys, ev, qualified := strings.Cut(name, ":")
	if !qualified {
		sys, ev = "", name
	}
	var found []*parse.Format
	var names []string          // what name is compared with, for the hint
	full := map[string]string{} // names -> SYS:EVENT
	for _, e := range f.Events {
		fm := e.Format
		n := fm.Name
		if qualified {
			n = fm.FullName()
		}
		names = append(names, n)
		full[n] = fm.FullName()
		if fm.Name == ev && (!qualified || fm.System == sys) {
			found = append(found, fm)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		err := fmt.Errorf("event %q: %w", name, ErrNoEvent)
		sort.Strings(names)
		if s := parse.Nearest(name, names); s != "" {
			err = fmt.Errorf("%w (did you mean %q?)", err, full[s])
		}
		return nil, err
	}
	names = names[:0]
	for _, fm := range found {
		names = append(names, fm.FullName())
	}
	sort.Strings(names)
	return nil, fmt.Errorf("event %q is ambiguous in the trace.dat file: %s", name, strings.Join(names, ", "))
}

// RunFile runs a hist over the records of one event of a trace.dat file,
// with the format the file stores for it, and returns the same table that
// the BPF program would have filled: the same keys, string truncation,
// filter, sums and saved comms.
//
// The records of the file's top instance are read, one CPU at a time, by
// up to o.Workers goroutines that share one tracingmap.Map. The pid of a
// record is its common_pid, its comm the file's saved cmdline of that pid
// ("<idle>" for pid 0, "<...>" when the file has none).
//
// While the table has room, the order of the events does not change the
// result. When it is full, which new keys are dropped depends on the
// order: RunFile then counts the events in the order of the file's merged
// timeline (by timestamp, ties to the lower CPU, as trace-cmd report lists
// them), as one CPU would have seen them. A parallel pass that finds the
// table full stops and the records are read again in that order.
//
// common_timestamp is the records' time stamp, in the file's clock, which
// a hist that uses it must name (clock=, mono by default).
//
// Table.Lost is the number of events, of any event type, that the ring
// buffer lost while the file was recorded, as far as the file says.
//
// f.Progress says how far RunFile has read, for a progress line: the
// Iterators of all CPUs are made before any is read, so Total grows by
// the top instance's data at the start, and once more for a pass in the
// timeline's order.
//
// Errors about the spec are *parse.Error on spec.Src. If the records of a
// CPU are damaged, RunFile returns the table of the records it could read
// together with an error naming the damage. When ctx is done, it stops
// within a few thousand records and returns the table of the records
// counted so far (with several workers, not the same prefix of every
// CPU's records) together with context.Cause(ctx).
func RunFile(ctx context.Context, spec *parse.HistSpec, f *tracedat.File, event string, o FileOptions) (*Table, error) {
	if f.BigEndian {
		return nil, errors.New("read records of a big-endian trace.dat file: not supported")
	}
	fm, err := FileFormat(f, event)
	if err != nil {
		return nil, err
	}
	if spec.Timestamp() && spec.EffectiveClock() != f.Clock {
		if spec.Clock == "" {
			return nil, fmt.Errorf("common_timestamp: the trace.dat file was recorded with clock %s: add :clock=%s to the hist", f.Clock, f.Clock)
		}
		return nil, spec.Errorf(spec.ClockOff, spec.ClockEnd, "the trace.dat file was recorded with clock %s", f.Clock).
			WithHint("common_timestamp over a file is in the file's clock: use clock=%s", f.Clock)
	}
	r, err := newFileRun(spec, fm, f.Cmdlines, ksym.TextFuncRange(f.Kallsyms))
	if err != nil {
		return nil, err
	}
	if len(o.PIDs) > 0 {
		r.pids = map[int32]bool{}
		for _, pid := range o.PIDs {
			r.pids[int32(pid)] = true
		}
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var cpus []int
	for _, cd := range f.CPUs {
		if cd.Size > 0 {
			cpus = append(cpus, cd.CPU)
		}
	}
	if workers > 1 && len(cpus) > 1 {
		m, lost, full, err := r.parallel(ctx, f, cpus, min(workers, len(cpus)))
		if ctx.Err() != nil {
			return r.table(m, lost), context.Cause(ctx)
		}
		if !full {
			return r.table(m, lost), err
		}
	}
	return r.sequential(ctx, f)
}

// Engine runs a hist in user space over raw event records fed to it one at
// a time, from anywhere (tests, a live stream): RunFile's engine at one
// worker. It counts the records as the BPF program counts events, so it
// gives the same table for the same events. Where RunFile names the task
// of a record from the file's saved cmdlines, the caller of Add names it.
// An Engine is not safe for concurrent use.
type Engine struct {
	r *fileRun
	m *tracingmap.Map
	w *fileWorker
}

// NewEngine resolves spec against the format f of the records' event.
// funcs resolves the filter's .function values (nil: there are none).
// Errors about the spec are *parse.Error on spec.Src.
func NewEngine(spec *parse.HistSpec, f *parse.Format, funcs parse.FuncResolver) (*Engine, error) {
	r, err := newFileRun(spec, f, nil, funcs)
	if err != nil {
		return nil, err
	}
	return r.engine(), nil
}

// engine returns an empty Engine of the run, with one worker.
func (r *fileRun) engine() *Engine {
	m := tracingmap.New(r.keySize, len(r.vals), r.plan.Size)
	return &Engine{r: r, m: m, w: r.newWorker(m)}
}

// Add counts one event: rec is its raw record as the ring buffer holds
// it, common fields first (common_type, common_flags,
// common_preempt_count, common_pid), cpu the CPU it happened on and comm
// the name of the task that made it, for comm keys, the filter and the
// entries of .execname keys, which keep the comm of the event that
// created them. Records of another event (by common_type) are not counted.
// A new key that finds the table full is counted in Table.Dropped.
// common_timestamp is 0: use AddAt for hists that use it.
func (e *Engine) Add(rec []byte, cpu int, comm string) { e.AddAt(rec, cpu, comm, 0) }

// AddAt counts one event as Add does, ts its time stamp in nanoseconds,
// the common_timestamp of keys and values.
func (e *Engine) AddAt(rec []byte, cpu int, comm string, ts uint64) {
	if e.r.isEvent(rec) {
		e.w.count(rec, cpu, recordPID(rec), comm, ts)
	}
}

// Table returns the table of the events added so far, entries in the order
// their keys were first counted. Later Adds do not change it.
func (e *Engine) Table() *Table {
	e.w.flush()
	return e.r.table(e.m, e.w.lost)
}

// fileRun is a hist resolved against one event, with the names of the
// tasks of a trace.dat file.
type fileRun struct {
	plan     *Plan
	id       uint16
	filter   *parse.BoundFilter
	keys     []fileKey
	vals     []fileVal
	keySize  int
	needComm bool // the comm of each record is looked up
	saveComm bool // .execname: entries keep the comm they were created with
	cmdlines map[int]string
	pids     map[int32]bool // count only records of these common_pids; nil: all
}

// fileVal is one summed value: a field, or an expression when expr is
// not nil.
type fileVal struct {
	field *parse.Field
	expr  *bpfgen.Expr
}

// fileKey is one key slot of the BPF layout and how to fill it.
type fileKey struct {
	expr  *bpfgen.Expr // common_timestamp or an expression
	src   bpfgen.KeySrc
	field *parse.Field
	key   *Key
	str   bool
	off   int
	size  int
	max   int // strings: the longest text the slot holds
}

func newFileRun(spec *parse.HistSpec, fm *parse.Format, cmdlines map[int]string, funcs parse.FuncResolver) (*fileRun, error) {
	p, err := NewPlan(spec, fm)
	if err != nil {
		return nil, err
	}
	if err := noStackKeys(p); err != nil {
		return nil, err
	}
	return newFileRunPlan(p, fm, cmdlines, funcs)
}

// noStackKeys refuses the stack keys of p over records.
func noStackKeys(p *Plan) error {
	for _, k := range p.Keys {
		if k.Kind == KeyStack {
			return p.Spec.Errorf(k.Spec.Off, k.Spec.End, "a stack key needs a live hist: a trace.dat's records hold no stacks")
		}
	}
	return nil
}

// newFileRunPlan is newFileRun of a plan made already.
func newFileRunPlan(p *Plan, fm *parse.Format, cmdlines map[int]string, funcs parse.FuncResolver) (*fileRun, error) {
	spec := p.Spec
	var err error
	r := &fileRun{plan: p, id: uint16(fm.ID), cmdlines: cmdlines}
	if spec.Filter != nil {
		if r.filter, err = parse.BindFilter(spec.SrcName(), spec.Src, spec.Filter, fm); err != nil {
			return nil, spec.Locate(err)
		}
		if err = r.filter.ResolveFunctions(funcs); err != nil {
			return nil, spec.Locate(err)
		}
		r.needComm = true
	}
	// The layout of the BPF map: key bytes are built exactly as the
	// program builds them, and entries decoded as the live path does.
	l := p.Layout
	r.keySize = l.KeySize
	for i, s := range l.Keys {
		k := fileKey{expr: s.Expr, src: s.Src, field: s.Field, key: &p.Keys[i], off: s.Off, size: s.Size, max: s.Size - 1}
		switch {
		case k.key.Kind == KeyStack:
			// A live session's key: its bytes, not a string.
		case s.Src == bpfgen.SrcComm:
			k.str = true
			r.needComm = true
		case s.Src == bpfgen.SrcField && s.Field.Class == parse.ClassStringPtr && s.Size > 8:
			return nil, spec.Errorf(k.key.Spec.Off, k.key.Spec.End, "%q is a char *: the string it points to is not in the records", s.Field.Name).
				WithHint("a live hist reads the string; over records, %s.hex counts by the pointer, as the kernel's hist does", s.Field.Name)
		case s.Src == bpfgen.SrcField && s.Field.Class.IsString():
			k.str = true
			if s.Field.Class == parse.ClassString {
				k.max = min(k.max, s.Field.Size)
			}
		}
		r.keys = append(r.keys, k)
	}
	for _, v := range l.Vals {
		r.vals = append(r.vals, fileVal{field: v.Field, expr: v.Expr})
	}
	if l.CommOff >= 0 {
		r.needComm, r.saveComm = true, true
	}
	return r, nil
}

// parallel counts the records with one goroutine per CPU stream, workers
// at a time. It stops early when a new key finds the table full, with
// full set, or when ctx is done.
func (r *fileRun) parallel(ctx context.Context, f *tracedat.File, cpus []int, workers int) (m *tracingmap.Map, lost uint64, full bool, err error) {
	m = tracingmap.New(r.keySize, len(r.vals), r.plan.Size)
	var (
		next   atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		losses atomic.Uint64
	)
	// Every CPU's Iterator is made before any is read: the File's
	// Progress then counts all of them from the start.
	its := make([]*tracedat.Iterator, len(cpus))
	for i, cpu := range cpus {
		its[i] = f.Records(cpu)
	}
	for range workers {
		wg.Go(func() {
			w := r.newWorker(m)
			defer func() {
				w.flush()
				losses.Add(w.lost)
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cpus) {
					return
				}
				it := its[i]
				its[i] = nil
				for n := 1; it.Next(); n++ {
					rec := it.Record()
					if !w.add(&rec) {
						stop.Store(true)
						return
					}
					if n%checkEvery == 0 && (stop.Load() || ctx.Err() != nil) {
						stop.Store(true)
						return
					}
				}
				if err := it.Err(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return m, losses.Load(), stop.Load(), readErr(errors.Join(errs...))
}

// sequential counts the records in the order of the merged timeline, until
// ctx is done.
func (r *fileRun) sequential(ctx context.Context, f *tracedat.File) (*Table, error) {
	e := r.engine()
	it := f.Records()
	for n := 1; it.Next(); n++ {
		rec := it.Record()
		e.w.add(&rec)
		if n%checkEvery == 0 && ctx.Err() != nil {
			return e.Table(), context.Cause(ctx)
		}
	}
	return e.Table(), readErr(it.Err())
}

func readErr(err error) error {
	if err != nil {
		return fmt.Errorf("read records: %w", err)
	}
	return nil
}

// table turns the map into a Table, decoding entries as the live path
// decodes the BPF map's.
func (r *fileRun) table(m *tracingmap.Map, lost uint64) *Table {
	l := r.plan.Layout
	t := &Table{Plan: r.plan, Dropped: m.Drops(), Lost: lost}
	if l.DropSums {
		t.DroppedVals = make([]uint64, len(l.Vals))
		for i := range t.DroppedVals {
			t.DroppedVals[i] = m.DroppedSum(1 + i)
		}
	}
	val := make([]byte, l.ValueSize)
	for _, e := range m.Entries() {
		binary.LittleEndian.PutUint64(val, e.Sums[0])
		for i, v := range l.Vals {
			binary.LittleEndian.PutUint64(val[v.Off:], e.Sums[1+i])
		}
		if l.CommOff >= 0 {
			comm := val[l.CommOff : l.CommOff+bpfgen.CommLen]
			clear(comm)
			copy(comm[:commLen], e.Comm)
		}
		t.Entries = append(t.Entries, r.plan.decode(e.Key, val))
	}
	return t
}

// fileWorker counts records into a map; one per goroutine. It keeps the
// sums of the elements it updates in an array of its own, indexed by
// element, and adds them to the map's elements in flush: an atomic add per
// event would cost as much again as finding the element, and far more when
// the workers of two CPUs update the same element.
type fileWorker struct {
	r      *fileRun
	m      *tracingmap.Map
	key    []byte
	sums   []uint64          // nSums per element of the map
	elts   []*tracingmap.Elt // the elements with sums in sums
	pid    int32             // pid of comm, the last one looked up
	comm   string
	looked bool   // pid and comm are set
	lost   uint64 // events the ring buffer lost, from the records' Missed
}

func (r *fileRun) newWorker(m *tracingmap.Map) *fileWorker {
	return &fileWorker{r: r, m: m, key: make([]byte, r.keySize), sums: make([]uint64, m.Cap()*(1+len(r.vals)))}
}

// flush adds the worker's sums to the map's elements.
func (w *fileWorker) flush() {
	ns := 1 + len(w.r.vals)
	for _, e := range w.elts {
		sums := w.sums[e.Index()*ns:][:ns]
		for i, v := range sums {
			e.Add(i, v)
		}
		clear(sums)
	}
	w.elts = w.elts[:0]
}

// add counts one record of the file if it is of the event and passes the
// filter, its comm the file's name for its common_pid. It returns false if
// its key was new and the table full.
func (w *fileWorker) add(rec *tracedat.Record) bool {
	if rec.Missed > 0 {
		w.lost += uint64(rec.Missed)
	}
	d := rec.Data
	if !w.r.isEvent(d) {
		return true
	}
	pid := recordPID(d)
	if w.r.pids != nil && !w.r.pids[pid] {
		return true
	}
	var comm string
	if w.r.needComm {
		comm = w.commOf(pid)
	}
	return w.count(d, rec.CPU, pid, comm, rec.TS)
}

// isEvent reports whether d is a record of the run's event.
func (r *fileRun) isEvent(d []byte) bool {
	return len(d) >= 2 && binary.LittleEndian.Uint16(d) == r.id
}

// recordPID is the common_pid of record d, -1 if d is too short to hold it.
func recordPID(d []byte) int32 {
	if len(d) < 8 {
		return -1
	}
	return int32(binary.LittleEndian.Uint32(d[4:]))
}

// count counts record d of the event, recorded on cpu at time ts by task
// pid named comm, if it passes the filter. It returns false if its key was new and
// the table full.
func (w *fileWorker) count(d []byte, cpu int, pid int32, comm string, ts uint64) bool {
	r := w.r
	if r.filter != nil && !eval.Match(r.filter, d, eval.Context{PID: -1, CPU: cpu, Comm: comm}) {
		return true
	}
	key := w.key
	r.fillKey(key, d, cpu, pid, comm, ts)
	var e *tracingmap.Elt
	if r.saveComm {
		e = w.m.InsertComm(key, comm)
	} else {
		e = w.m.Insert(key)
	}
	if e == nil {
		if r.plan.Layout.DropSums {
			for i := range r.vals {
				w.m.AddDropped(1+i, r.vals[i].value(d, cpu, pid, ts))
			}
		}
		return false
	}
	sums := w.sums[e.Index()*(1+len(r.vals)):]
	if sums[0] == 0 {
		w.elts = append(w.elts, e)
	}
	sums[0]++
	for i, v := range r.vals {
		// Not v.value: the hot path keeps the field's read inline.
		if v.expr != nil {
			sums[1+i] += evalExpr(v.expr, d, cpu, pid, ts)
		} else {
			sums[1+i] += v.field.Value(d)
		}
	}
	return true
}

// fillKey builds the key of record d, recorded on cpu at time ts by task
// pid named comm, in key, as the BPF program builds it.
func (r *fileRun) fillKey(key, d []byte, cpu int, pid int32, comm string, ts uint64) {
	for i := range r.keys {
		k := &r.keys[i]
		var v uint64
		switch {
		case k.str:
			slot := key[k.off : k.off+k.size]
			clear(slot)
			if k.src == bpfgen.SrcComm {
				copy(slot[:k.max], comm)
			} else {
				copy(slot[:k.max], k.field.Bytes(d))
			}
			continue
		case k.expr != nil:
			v = evalExpr(k.expr, d, cpu, pid, ts)
		case k.src == bpfgen.SrcPID:
			v = uint64(int64(pid))
		case k.src == bpfgen.SrcCPU:
			v = uint64(cpu)
		default:
			v = k.field.Value(d)
		}
		binary.LittleEndian.PutUint64(key[k.off:], bucket(k.key, v))
	}
}

// value is the number record d adds to the sum, recorded on cpu at time
// ts by task pid (for a dropped event).
func (v *fileVal) value(d []byte, cpu int, pid int32, ts uint64) uint64 {
	if v.expr != nil {
		return evalExpr(v.expr, d, cpu, pid, ts)
	}
	return v.field.Value(d)
}

// commOf is the task name of pid as trace-cmd names it.
func (w *fileWorker) commOf(pid int32) string {
	if !w.looked || pid != w.pid {
		w.pid, w.looked = pid, true
		switch c, ok := w.r.cmdlines[int(pid)]; {
		case pid == 0:
			w.comm = "<idle>"
		case ok:
			w.comm = c
		default:
			w.comm = "<...>"
		}
	}
	return w.comm
}

// bucket applies a key's .log2 or .buckets=N transform to v.
func bucket(k *Key, v uint64) uint64 {
	switch k.Spec.Mod {
	case parse.ModLog2:
		return log2Bucket(v)
	case parse.ModBuckets:
		if n := k.Spec.Buckets; n > 0 {
			return v / n * n
		}
	}
	return v
}

// log2Bucket is ilog2(roundup_pow_of_two(v)): bucket k holds (2^(k-1), 2^k];
// 0 and 1 land in bucket 0, values above 2^63 in bucket 64.
func log2Bucket(v uint64) uint64 {
	if v <= 1 {
		return 0
	}
	return uint64(bits.Len64(v - 1))
}

// evalExpr computes e for record d, recorded on cpu at time ts (ns) by
// task pid, as the BPF program computes it: u64 arithmetic, '/' exact
// (as int64 when signed), a division by zero -1.
func evalExpr(e *bpfgen.Expr, d []byte, cpu int, pid int32, ts uint64) uint64 {
	switch e.Op {
	case 0:
		switch e.Src {
		case bpfgen.SrcField:
			return e.Field.Value(d)
		case bpfgen.SrcPID:
			return uint64(int64(pid))
		case bpfgen.SrcCPU:
			return uint64(cpu)
		case bpfgen.SrcTime:
			if e.Usecs {
				return (ts + 500) / 1000
			}
			return ts
		}
		return e.Const
	case 'n':
		return -evalExpr(e.L, d, cpu, pid, ts)
	}
	return binaryOp(e.Op, e.Signed, evalExpr(e.L, d, cpu, pid, ts), evalExpr(e.R, d, cpu, pid, ts))
}

// binaryOp applies a hist expression's operator as the BPF program does:
// u64 arithmetic, exact division (signed when the expression is), and a
// division by 0 giving all ones, as the kernel's.
func binaryOp(op byte, signed bool, a, b uint64) uint64 {
	switch op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	}
	switch {
	case b == 0:
		return math.MaxUint64
	case signed:
		return uint64(int64(a) / int64(b))
	}
	return a / b
}
