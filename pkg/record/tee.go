package record

import "errors"

// Tee returns an Output that gives every record to both outputs: a
// trace.dat file and a live stream (filter -o), or a file and a flight
// recorder (snapshot triggers).
func Tee(a, b Output) Output { return &tee{a, b} }

type tee struct{ a, b Output }

func (t *tee) CPU(cpu int) PageSink { return &teeSink{t.a.CPU(cpu), t.b.CPU(cpu)} }

func (t *tee) Finish(st *Stats, cmdlines map[int]string) error {
	return errors.Join(t.a.Finish(st, cmdlines), t.b.Finish(st, cmdlines))
}

func (t *tee) Abort() {
	t.a.Abort()
	t.b.Abort()
}

// teeSink is a ChunkSink that passes everything to two sinks.
type teeSink struct{ a, b PageSink }

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
	for _, s := range []PageSink{t.a, t.b} {
		if cs, ok := s.(ChunkSink); ok {
			errs = append(errs, cs.EndChunk())
		}
	}
	return errors.Join(errs...)
}
