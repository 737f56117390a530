package hist

import (
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
)

// Offline runs a hist in user space over raw records (the Go interpreter
// path): the same plan, filter and key rules as the BPF program, so the two
// give the same table for the same events.
type Offline struct {
	plan    *Plan
	agg     *Aggregator
	filter  *parse.BoundFilter
	keySrc  []keySource
	valFlds []*parse.Field
	keys    []KeyValue
	vals    []uint64
}

type keySource struct {
	src   bpfgen.KeySrc
	field *parse.Field
	max   int // strings: the longest text the BPF key slot holds
}

// NewOffline resolves spec against f for user-space aggregation; funcs
// resolves the filter's .function values (nil: there are none).
func NewOffline(spec *parse.HistSpec, f *parse.Format, funcs parse.FuncResolver) (*Offline, error) {
	p, err := NewPlan(spec, f)
	if err != nil {
		return nil, err
	}
	o := &Offline{plan: p, agg: NewAggregator(p, p.Size)}
	if spec.Filter != nil {
		if o.filter, err = parse.BindFilter("hist", spec.Src, spec.Filter, f); err != nil {
			return nil, spec.Locate(err)
		}
		if err = o.filter.ResolveFunctions(funcs); err != nil {
			return nil, spec.Locate(err)
		}
	}
	// The same sources and string limits as the BPF layout.
	for _, s := range p.Layout.Keys {
		ks := keySource{src: s.Src, field: s.Field, max: s.Size - 1}
		if s.Src == bpfgen.SrcField && s.Field.Class == parse.ClassString {
			ks.max = min(ks.max, s.Field.Size)
		}
		o.keySrc = append(o.keySrc, ks)
	}
	for _, v := range p.Layout.Vals {
		o.valFlds = append(o.valFlds, v.Field)
	}
	o.keys = make([]KeyValue, len(o.keySrc))
	o.vals = make([]uint64, len(o.valFlds))
	return o, nil
}

// Plan returns the resolved plan.
func (o *Offline) Plan() *Plan { return o.plan }

// Add counts one record. c gives the pseudo-fields; c.PID < 0 means the
// record's common_pid.
func (o *Offline) Add(rec []byte, c eval.Context) {
	if o.filter != nil && !eval.Match(o.filter, rec, c) {
		return
	}
	pid := c.PID
	if pid < 0 && len(rec) >= 8 {
		pid = int32(uint32(rec[4]) | uint32(rec[5])<<8 | uint32(rec[6])<<16 | uint32(rec[7])<<24)
	}
	for i, s := range o.keySrc {
		switch s.src {
		case bpfgen.SrcPID:
			o.keys[i] = KeyValue{Num: uint64(int64(pid))}
		case bpfgen.SrcCPU:
			o.keys[i] = KeyValue{Num: uint64(c.CPU)}
		case bpfgen.SrcComm:
			o.keys[i] = KeyValue{Str: truncate(c.Comm, s.max)}
		default:
			if s.field.Class.IsString() {
				o.keys[i] = KeyValue{Str: truncate(string(s.field.Bytes(rec)), s.max)}
			} else {
				o.keys[i] = KeyValue{Num: s.field.Value(rec)}
			}
		}
	}
	for i, f := range o.valFlds {
		o.vals[i] = f.Value(rec)
	}
	o.agg.Add(o.keys, c.Comm, o.vals)
}

// Table returns the aggregated table.
func (o *Offline) Table() *Table { return o.agg.Table() }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
