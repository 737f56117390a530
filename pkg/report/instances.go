package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gtrace/gtrace/pkg/tracedat"
)

// This file merges the ring-buffer instances of a file (trace-cmd record
// -B, extract -a) as trace-cmd report 3.1.6 does: one stream ordered by
// timestamp, where a tie goes to the top instance, then to the other
// instances in file order, then to the lower CPU. When the file has
// instances other than the top one, every record is tagged with its
// instance's name, right-aligned to the longest name, and ": "; records
// of the top instance get blanks of the same width.

// source is one instance's records.
type source struct {
	recSource
	name string // instance name, "" for the top instance
	tag  []byte // what goes before each of its records, nil if nothing
}

// checkEvery is how many records a merge reads between looks at its
// context.
const checkEvery = 1024

// merge reads the records of every instance of a file by timestamp.
type merge struct {
	ctx  context.Context
	n    int       // records read
	cut  bool      // ended because ctx is done
	all  []*source // every instance read, for err
	live []*source // the instances with a record left, in report order
	cur  *source   // the instance of the current record
}

// newMerge returns a merge of f's instances. With cpus, it reads only
// the records of those CPUs, numbered as trace-cmd report --cpu numbers
// them: the CPUs of all instances one after the other, in report order.
// The top instance takes as many numbers as cpus=N says, every other
// instance as many, or more if its data names a higher CPU. The merge
// ends early when ctx is done (see stopped).
func newMerge(ctx context.Context, f *tracedat.File, cpus []int) *merge {
	bufs := reportOrder(f)
	width := -1 // no tags
	for _, b := range bufs[1:] {
		width = max(width, len(tagName(b.Name)))
	}
	m := &merge{ctx: ctx}
	first := 0 // the number of the instance's CPU 0
	for _, b := range bufs {
		n := instanceCPUs(f, b)
		var sel []int // the instance's CPUs that cpus selects
		for _, c := range cpus {
			if c >= first && c < first+n {
				sel = append(sel, c-first)
			}
		}
		first += n
		if len(cpus) > 0 && len(sel) == 0 {
			continue
		}
		s := &source{recSource: recSource{it: f.BufferRecords(b, sel...)}, name: b.Name}
		if width >= 0 {
			s.tag = appendTag(nil, tagName(b.Name), width)
		}
		m.all = append(m.all, s)
		if s.next() {
			m.live = append(m.live, s)
		}
	}
	return m
}

// instanceCPUs is how many CPU numbers --cpu gives the instance b of f:
// as many as cpus=N says, or more for an instance other than the top one
// whose data names a higher CPU.
func instanceCPUs(f *tracedat.File, b *tracedat.Buffer) int {
	n := cpuCount(f)
	if b.Name != "" && len(b.CPUs) > 0 {
		n = max(n, b.CPUs[len(b.CPUs)-1].CPU+1)
	}
	return n
}

// CPUCount returns how many CPUs Options.CPUs numbers in f: its CPUs 0 to
// CPUCount-1, those of all its instances one after the other.
func CPUCount(f *tracedat.File) int {
	n := 0
	for _, b := range reportOrder(f) {
		n += instanceCPUs(f, b)
	}
	return n
}

// reportOrder returns f's instances in the order trace-cmd reports them:
// the top instance (an empty one if the file has none), then the others
// in file order.
func reportOrder(f *tracedat.File) []*tracedat.Buffer {
	top := topBuffer(f)
	if top == nil {
		top = &tracedat.Buffer{}
	}
	bufs := []*tracedat.Buffer{top}
	for _, b := range f.Buffers {
		if b.Name != "" {
			bufs = append(bufs, b)
		}
	}
	return bufs
}

// tagName is the part of an instance name trace-cmd prints: what follows
// its last '/'.
func tagName(name string) string {
	return name[strings.LastIndexByte(name, '/')+1:]
}

// appendTag appends name right-aligned in width and ": ", or blanks in
// their place for an empty name.
func appendTag(b []byte, name string, width int) []byte {
	b = appendSpaces(b, width-len(name))
	if name == "" {
		return append(b, "  "...)
	}
	b = append(b, name...)
	return append(b, ": "...)
}

// next advances to the record with the lowest timestamp of all instances
// and reports whether there is one; it is m.cur.cur. It reports false,
// without advancing, once the merge's context is done.
func (m *merge) next() bool {
	m.n++
	if m.n%checkEvery == 0 && m.ctx.Err() != nil {
		m.cur, m.live, m.cut = nil, nil, true
		return false
	}
	if s := m.cur; s != nil && !s.next() {
		i := slices.Index(m.live, s)
		m.live = slices.Delete(m.live, i, i+1)
	}
	m.cur = nil
	for _, s := range m.live {
		if m.cur == nil || s.cur.TS < m.cur.cur.TS {
			m.cur = s
		}
	}
	return m.cur != nil
}

// stopped returns the cause of the merge's context if the merge ended
// early because it was done, else nil.
func (m *merge) stopped() error {
	if m.cut {
		return context.Cause(m.ctx)
	}
	return nil
}

// err returns the read errors of all instances.
func (m *merge) err() error {
	var errs []error
	for _, s := range m.all {
		if err := s.it.Err(); err != nil {
			if s.name != "" {
				err = fmt.Errorf("instance %q: %w", s.name, err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
