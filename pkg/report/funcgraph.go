package report

import (
	"strconv"

	"github.com/gtrace/gtrace/pkg/tracedat"
)

// This file holds trace-cmd's own function graph printing (its
// trace-ftrace.c): an entry whose return is the next record prints as a
// leaf "func();" line and swallows the return.

// recSource reads records with a one-record look-ahead.
type recSource struct {
	it     *tracedat.Iterator
	cur    tracedat.Record
	peeked bool   // it holds a record next has not returned
	buf    []byte // cur.Data, copied before peeking
}

func (s *recSource) next() bool {
	if s.peeked {
		s.peeked = false
		s.cur = s.it.Record()
		return true
	}
	if !s.it.Next() {
		return false
	}
	s.cur = s.it.Record()
	return true
}

// peek returns the record after the current one.
func (s *recSource) peek() (tracedat.Record, bool) {
	if s.peeked {
		return s.it.Record(), true
	}
	s.buf = append(s.buf[:0], s.cur.Data...)
	s.cur.Data = s.buf
	if !s.it.Next() {
		return tracedat.Record{}, false
	}
	s.peeked = true
	return s.it.Record(), true
}

// skip drops the peeked record.
func (s *recSource) skip() { s.peeked = false }

// graphRet returns the funcgraph_exit event, or nil.
func (p *printer) graphRet() *event {
	for id, e := range p.formats {
		if e.Format.System == "ftrace" && e.Format.Name == "funcgraph_exit" {
			return p.eventFor(id)
		}
	}
	return nil
}

func fgraphEntry(p *printer, b []byte, r *rec) ([]byte, bool) {
	ret := p.graphRet()
	if ret == nil {
		return b, true
	}
	f := r.ev.findAnyField("common_pid")
	if f == nil {
		return append(b, "<CANT FIND FIELD common_pid>!"...), true
	}
	pid := p.readNum(r.data, f.offset, f.size)
	b, fn, ok := p.fieldVal(b, r, "func", true)
	if !ok {
		return append(b, '!'), true
	}
	if next, ok := p.peekNext(); ok {
		var isLeaf bool
		if b, isLeaf = p.leafReturn(b, ret, &next, pid, fn); isLeaf {
			p.skipNext()
			nr := rec{ev: ret, data: next.Data, cpu: next.CPU, ts: next.TS}
			return p.graphLeaf(b, r, &nr), false
		}
	}
	return p.graphNested(b, r), false
}

// leafReturn reports whether next is the return of the entry of function
// fn in task pid.
func (p *printer) leafReturn(b []byte, ret *event, next *tracedat.Record, pid, fn uint64) ([]byte, bool) {
	nr := rec{ev: ret, data: next.Data}
	t := ret.findAnyField("common_type")
	if t == nil || p.readNum(next.Data, t.offset, t.size) != uint64(ret.id) {
		return b, false
	}
	f := ret.findAnyField("common_pid")
	if f == nil || uint64(int64(int32(pid))) != p.readNum(next.Data, f.offset, f.size) {
		return b, false
	}
	b, v, ok := p.fieldVal(b, &nr, "func", true)
	return b, ok && v == fn
}

func (p *printer) graphLeaf(b []byte, r, ret *rec) []byte {
	b, rettime, ok := p.fieldVal(b, ret, "rettime", true)
	if !ok {
		return append(b, '!')
	}
	b, calltime, ok := p.fieldVal(b, ret, "calltime", true)
	if !ok {
		return append(b, '!')
	}
	d := rettime - calltime
	b = graphOverhead(b, d)
	b = graphDuration(b, d)
	b, depth, ok := p.fieldVal(b, r, "depth", true)
	if !ok {
		return append(b, '!')
	}
	b = p.pad(b, int(int32(depth*2)))
	b, fn, ok := p.fieldVal(b, r, "func", true)
	if !ok {
		return append(b, '!')
	}
	if e, ok := p.syms().find(fn); ok {
		b = append(b, e.name...)
	} else {
		b = appendHex(b, fn)
	}
	return append(b, "();"...)
}

func (p *printer) graphNested(b []byte, r *rec) []byte {
	b = append(b, "             |  "...)
	b, depth, ok := p.fieldVal(b, r, "depth", true)
	if !ok {
		return append(b, '!')
	}
	b = p.pad(b, int(int32(depth*2)))
	b, fn, ok := p.fieldVal(b, r, "func", true)
	if !ok {
		return append(b, '!')
	}
	if e, ok := p.syms().find(fn); ok {
		b = append(b, e.name...)
	} else {
		b = appendHex(b, fn)
	}
	return append(b, "() {"...)
}

func fgraphExit(p *printer, b []byte, r *rec) ([]byte, bool) {
	if p.graphRet() == nil {
		return b, true
	}
	b, rettime, ok := p.fieldVal(b, r, "rettime", true)
	if !ok {
		return append(b, '!'), true
	}
	b, calltime, ok := p.fieldVal(b, r, "calltime", true)
	if !ok {
		return append(b, '!'), true
	}
	d := rettime - calltime
	b = graphOverhead(b, d)
	b = graphDuration(b, d)
	b, depth, ok := p.fieldVal(b, r, "depth", true)
	if !ok {
		return append(b, '!'), true
	}
	b = p.pad(b, int(int32(depth*2)))
	return append(b, '}'), false
}

// graphOverhead marks long calls: $ over 1 s, # over 1 ms, ! over 100 µs,
// + over 10 µs.
func graphOverhead(b []byte, d uint64) []byte {
	switch {
	case d > 1000000000:
		return append(b, "$ "...)
	case d > 1000000:
		return append(b, "# "...)
	case d > 100000:
		return append(b, "! "...)
	case d > 10000:
		return append(b, "+ "...)
	}
	return append(b, "  "...)
}

// graphDuration prints the duration in µs, with ns when it fits in 7
// characters, padded to 7, then " us |  ".
func graphDuration(b []byte, d uint64) []byte {
	start := len(b)
	b = strconv.AppendUint(b, d/1000, 10)
	if len(b)-start < 7 {
		ns := d % 1000
		b = append(b, '.', byte('0'+ns/100), byte('0'+ns/10%10), byte('0'+ns%10))
	}
	n := len(b) - start
	b = append(b, " us "...)
	b = appendSpaces(b, 7-n)
	return append(b, "|  "...)
}
