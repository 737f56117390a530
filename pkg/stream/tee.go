package stream

import (
	"errors"

	"github.com/gtrace/gtrace/pkg/record"
)

// Tee returns an Output that gives every record to both outputs: a
// trace.dat file and a Stream, for filter -o.
func Tee(a, b record.Output) record.Output { return &tee{a, b} }

type tee struct{ a, b record.Output }

func (t *tee) CPU(cpu int) record.PageSink { return &teeSink{t.a.CPU(cpu), t.b.CPU(cpu)} }

func (t *tee) Finish(st *record.Stats, cmdlines map[int]string) error {
	return errors.Join(t.a.Finish(st, cmdlines), t.b.Finish(st, cmdlines))
}

func (t *tee) Abort() {
	t.a.Abort()
	t.b.Abort()
}

// teeSink is a record.ChunkSink that passes everything to two sinks.
type teeSink struct{ a, b record.PageSink }

func (t *teeSink) Add(ts uint64, payload []byte) error {
	return errors.Join(t.a.Add(ts, payload), t.b.Add(ts, payload))
}

func (t *teeSink) Lost(n uint64) {
	t.a.Lost(n)
	t.b.Lost(n)
}

func (t *teeSink) FlushPages() error { return errors.Join(t.a.FlushPages(), t.b.FlushPages()) }

func (t *teeSink) Flush() error { return errors.Join(t.a.Flush(), t.b.Flush()) }

// EndChunk passes the end of a chunk to the sinks that want it.
func (t *teeSink) EndChunk() error {
	var errs []error
	for _, s := range []record.PageSink{t.a, t.b} {
		if cs, ok := s.(record.ChunkSink); ok {
			errs = append(errs, cs.EndChunk())
		}
	}
	return errors.Join(errs...)
}
