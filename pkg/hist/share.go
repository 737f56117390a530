package hist

import (
	"context"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/ksym"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracingmap"
)

// Several hists of one command, as the kernel takes hist triggers written
// one after the other: any number on one event, but not the same one
// twice (EEXIST, grammar §3.3), and the hists of one name= sharing the
// table of the first of that name (§6.5), which the others must match.

// share checks plans, in command-line order, and returns for each the
// index of the plan whose table it counts into: its own, or that of the
// first plan of its name. Errors are *parse.Error on the spec at fault.
func share(plans []*Plan) ([]int, error) {
	owner := make([]int, len(plans))
	first := map[string]int{}
	for i, p := range plans {
		owner[i] = i
		s := p.Spec
		if s.Name != "" {
			if j, ok := first[s.Name]; !ok {
				first[s.Name] = i
			} else if !matchHist(plans[j], p) {
				return nil, s.Errorf(s.NameOff, s.NameOff+len(s.Name), "named hist trigger doesn't match existing named trigger").
					WithHint("the hists named %s share one table: give them the keys, values and sort of the first, on %s (%s), with fields of the same types and sizes",
						s.Name, plans[j].Event, plans[j].Spec)
			} else {
				owner[i] = j
			}
		}
		for _, q := range plans[:i] {
			if q.Event == p.Event && q.Spec.Name == s.Name && q.Spec.FilterText == s.FilterText && matchHist(q, p) {
				end := s.Keys[len(s.Keys)-1].End
				return nil, s.Errorf(s.Keys[0].Off, end, "hist trigger already exists").
					WithHint("%s has this hist already (the same keys, values, sort, name and filter): give it once", p.Event)
			}
		}
	}
	return owner, nil
}

// matchHist reports whether b is the hist a is, as the kernel's
// hist_trigger_match compares them without the filter: keys and values
// of the same names and modifiers on compatible fields, and the same
// sort. The size is not compared: a named hist has the first one's.
func matchHist(a, b *Plan) bool {
	if len(a.Keys) != len(b.Keys) || len(a.Vals) != len(b.Vals) || len(a.Spec.Sort) != len(b.Spec.Sort) ||
		a.HitcountMod != b.HitcountMod || a.Spec.NoHitcount != b.Spec.NoHitcount {
		return false
	}
	for i := range a.Keys {
		ka, kb := a.Layout.Keys[i], b.Layout.Keys[i]
		if !sameField(a.Keys[i].Spec, b.Keys[i].Spec) || ka.Src != kb.Src || ka.Size != kb.Size || !compatibleField(ka.Field, kb.Field) {
			return false
		}
	}
	for i := range a.Vals {
		if !sameField(a.Vals[i].Spec, b.Vals[i].Spec) || !compatibleField(a.Layout.Vals[i].Field, b.Layout.Vals[i].Field) {
			return false
		}
	}
	for i, s := range a.Spec.Sort {
		if t := b.Spec.Sort[i]; s.Name != t.Name || s.Descending != t.Descending {
			return false
		}
	}
	return true
}

func sameField(a, b parse.HistField) bool {
	return a.Name == b.Name && a.Mod == b.Mod && a.Buckets == b.Buckets
}

// compatibleField is the kernel's compatible_field: the same name, C type,
// size and signedness (nil for keys that are no field of the event).
func compatibleField(a, b *parse.Field) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.Type == b.Type && a.Size == b.Size && a.Signed == b.Signed
}

// sharedInfo is the trigger info the kernel prints for a hist that counts
// into the table of owner: owner's description (keys, values, sort, size
// and name), with the hist's own filter.
func sharedInfo(owner, own *parse.HistSpec) string {
	s := *owner
	s.FilterText = own.FilterText
	return s.String() + " [active]"
}

// shareLayout gives the plan of a hist that counts into the table of
// owner the size of that table, so that the two BPF maps are one.
func shareLayout(p, owner *Plan) {
	l := *p.Layout
	l.MaxEntries = owner.Layout.MaxEntries
	p.Layout = &l
	p.Size = owner.Size
}

// sharedMaps are the maps of a hist's collection that a hist counting into
// its table shares: the table and the drop counter (and the dropped sums,
// when a sum is .percent: start).
var sharedMaps = []string{bpfgen.HistMapName, bpfgen.DropsMapName}

// FileShares resolves hists against the formats of f and checks them as
// the kernel checks several hist triggers: it returns, for each hist, the
// index of the hist whose table it counts into (its own, or the first of
// its name) and its trigger info.
func FileShares(f *tracedat.File, hists []EventHist) (owner []int, infos []string, err error) {
	formats := make([]*parse.Format, len(hists))
	specs := make([]*parse.HistSpec, len(hists))
	for i, h := range hists {
		if formats[i], err = FileFormat(f, h.Event); err != nil {
			return nil, nil, err
		}
		specs[i] = h.Spec
	}
	plans, owner, err := shares(formats, specs)
	if err != nil {
		return nil, nil, err
	}
	for i, p := range plans {
		info := p.Spec.String() + " [active]"
		if o := plans[owner[i]]; o != p {
			info = sharedInfo(o.Spec, p.Spec)
		}
		infos = append(infos, info)
	}
	return owner, infos, nil
}

// Shares resolves each hist of specs against the format of its event,
// formats[i], and checks them, in order, as the kernel checks hist
// triggers written one after the other: every key and value must be
// one of the event's fields or gtrace's keys, a second hist of a name= must match the
// first of that name, and one event cannot have the same hist twice. It
// returns, for each hist, the index of the hist whose table it counts
// into: its own, or that of the first hist of its name. It needs no
// kernel. Errors are *parse.Error on the spec at fault.
func Shares(formats []*parse.Format, specs []*parse.HistSpec) ([]int, error) {
	_, owner, err := shares(formats, specs)
	return owner, err
}

func shares(formats []*parse.Format, specs []*parse.HistSpec) ([]*Plan, []int, error) {
	plans := make([]*Plan, len(specs))
	for i, s := range specs {
		p, err := NewPlan(s, formats[i])
		if err != nil {
			return nil, nil, err
		}
		plans[i] = p
	}
	owner, err := share(plans)
	if err != nil {
		return nil, nil, err
	}
	return plans, owner, nil
}

// RunFileShared runs hists that share the table of the first (a named
// hist of several events, FileShares) over the records of f, in the order
// of the merged timeline, each record counted by the hist of its event.
func RunFileShared(ctx context.Context, hists []EventHist, f *tracedat.File, o FileOptions) (*Table, error) {
	var runs []*fileRun
	for _, h := range hists {
		fm, err := FileFormat(f, h.Event)
		if err != nil {
			return nil, err
		}
		r, err := newFileRun(h.Spec, fm, f.Cmdlines, ksym.TextFuncRange(f.Kallsyms))
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			shareLayout(r.plan, runs[0].plan)
		}
		if len(o.PIDs) > 0 {
			r.pids = map[int32]bool{}
			for _, pid := range o.PIDs {
				r.pids[int32(pid)] = true
			}
		}
		runs = append(runs, r)
	}
	m := tracingmap.New(runs[0].keySize, len(runs[0].vals), runs[0].plan.Size)
	workers := make([]*fileWorker, len(runs))
	for i, r := range runs {
		workers[i] = r.newWorker(m)
	}
	var lost uint64
	table := func() *Table {
		for _, w := range workers {
			w.flush()
		}
		return runs[0].table(m, lost)
	}
	it := f.Records()
	for n := 1; it.Next(); n++ {
		rec := it.Record()
		if rec.Missed > 0 {
			lost += uint64(rec.Missed)
		}
		rec.Missed = 0
		for _, w := range workers {
			if w.r.isEvent(rec.Data) {
				w.add(&rec)
				break
			}
		}
		if n%checkEvery == 0 && ctx.Err() != nil {
			return table(), context.Cause(ctx)
		}
	}
	return table(), readErr(it.Err())
}
