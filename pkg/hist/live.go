package hist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/probe"
)

// LiveOptions are the parts of a live hist that are not in its spec.
type LiveOptions struct {
	Filter      bpfgen.FilterEmitter // compiled hist filter, nil for none
	ExcludeTGID uint32               // do not count this process (gtrace itself)
	OnlyTGIDs   []uint32             // count only these processes (-P)
	// Direct, when not nil, puts the program of a raw_syscalls event on
	// its raw tracepoint where gtrace can build the record
	// (bpfgen.HistSpec's Direct; probe.DirectOptions); Start falls back
	// to the classic tracepoint if the kernel refuses it.
	Direct *bpfgen.DirectOptions
}

// Compiled is a plan turned into a BPF program for one event.
type Compiled struct {
	Plan    *Plan
	Format  *parse.Format
	Layout  *bpfgen.HistSpec
	Program *bpfgen.Program
}

// Compile lays out the plan's keys and values in a BPF hash map and
// generates the program that fills it.
func Compile(p *Plan, f *parse.Format, o LiveOptions) (*Compiled, error) {
	l := &bpfgen.HistSpec{
		MaxEntries:  p.Size,
		Filter:      o.Filter,
		ExcludeTGID: o.ExcludeTGID,
		OnlyTGIDs:   o.OnlyTGIDs,
		CommOff:     -1,
		Direct:      o.Direct,
		Event:       f,
	}
	off := 0
	for _, k := range p.Keys {
		slot := bpfgen.KeySlot{Off: off, Size: 8}
		switch k.Spec.Name {
		case "common_pid":
			slot.Src = bpfgen.SrcPID
		case "common_cpu":
			slot.Src = bpfgen.SrcCPU
		default:
			if fld := f.Field(k.Spec.Name); fld != nil {
				slot.Src = bpfgen.SrcField
				slot.Field = fld
				if fld.Class.IsString() {
					slot.Size = bpfgen.StringSlotSize(fld)
				}
			} else {
				slot.Src = bpfgen.SrcComm
				slot.Size = bpfgen.CommLen
			}
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
		l.Vals = append(l.Vals, bpfgen.ValSlot{Field: f.Field(v.Spec.Name), Off: voff})
		voff += 8
	}
	if l.CommOff == 0 {
		l.CommOff = voff
		voff += bpfgen.CommLen
	}
	l.ValueSize = voff
	prog, err := bpfgen.Hist(l)
	if err != nil {
		return nil, fmt.Errorf("generate hist for %s: %w", p.Event, err)
	}
	return &Compiled{Plan: p, Format: f, Layout: l, Program: prog}, nil
}

// decode turns a map entry into a table entry.
func (c *Compiled) decode(key, val []byte) Entry {
	e := Entry{Keys: make([]KeyValue, len(c.Layout.Keys)), Vals: make([]uint64, len(c.Layout.Vals))}
	for i, s := range c.Layout.Keys {
		b := key[s.Off : s.Off+s.Size]
		if c.Plan.Keys[i].Kind == KeyString {
			e.Keys[i].Str = cString(b)
		} else {
			e.Keys[i].Num = binary.LittleEndian.Uint64(b)
		}
	}
	e.Hitcount = binary.LittleEndian.Uint64(val)
	for i, s := range c.Layout.Vals {
		e.Vals[i] = binary.LittleEndian.Uint64(val[s.Off:])
	}
	if c.Layout.CommOff >= 0 {
		e.Comm = cString(val[c.Layout.CommOff : c.Layout.CommOff+bpfgen.CommLen])
	}
	return e
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Live is a compiled hist loaded into the kernel and attached.
type Live struct {
	c    *Compiled
	objs *probe.Objects
}

// Start loads the program and attaches it to the event's tracepoint.
func Start(c *Compiled) (*Live, error) {
	objs, err := probe.Load(c.Program.Collection)
	if err != nil && bpfgen.HistTracepoint(c.Layout) != "" {
		// Some kernels refuse tracing programs (lockdown, LSM policy):
		// the classic tracepoint counts the same events.
		l := *c.Layout
		l.Direct = nil
		prog, gerr := bpfgen.Hist(&l)
		if gerr != nil {
			return nil, errors.Join(err, gerr)
		}
		c.Layout, c.Program = &l, prog
		objs, err = probe.Load(c.Program.Collection)
	}
	if err != nil {
		return nil, err
	}
	if err := objs.AttachTracepoint(bpfgen.HistProgName, c.Format.System, c.Format.Name); err != nil {
		objs.Close()
		return nil, err
	}
	return &Live{c: c, objs: objs}, nil
}

// Snapshot reads the table; with clear it also empties it and resets the
// drop count (for --interval --clear).
func (l *Live) Snapshot(clear bool) (*Table, error) {
	t := &Table{Plan: l.c.Plan}
	read := probe.ForEach
	if clear {
		read = probe.Drain
	}
	err := read(l.objs.Map(bpfgen.HistMapName), func(k, v []byte) {
		t.Entries = append(t.Entries, l.c.decode(k, v))
	})
	if err != nil {
		return nil, err
	}
	if t.Dropped, err = probe.ReadU64(l.objs.Map(bpfgen.DropsMapName), clear); err != nil {
		return nil, err
	}
	return t, nil
}

// Close detaches and unloads the program.
func (l *Live) Close() error { return l.objs.Close() }
