package record

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gtrace/gtrace/pkg/bpfgen"
)

// Each CPU has two goroutines: a reader, which copies the batches of
// samples in the CPU's ring (see package bpfgen) into chunks of memory and
// hands them on, and a writer, which turns the samples' records into pages
// through the CPU's PageSink. The
// writer blocks when the file system does (ext4 stalls writes for tens of
// milliseconds now and then); the reader never blocks, so the ring keeps
// draining while up to maxChunks chunks wait for the disk.
//
// Polling: the programs never wake the reader. After each look at its
// ring, the reader estimates how fast the ring fills from what arrived
// since the last look, and sleeps until it would be an eighth full, at
// most maxWait; an idle reader backs off from minWait to maxWait. Waits
// shorter than spinWait are not worth a sleep: the reader looks again at
// once. An 8 MiB ring holds about 18 ms of a syscall storm on one CPU;
// the margin is for sleeps that overshoot on a busy machine.
const (
	minWait  = time.Millisecond
	maxWait  = 4 * time.Millisecond
	spinWait = 50 * time.Microsecond
	// drainWait bounds how long the final drain waits for records that
	// programs reserved but have not submitted.
	drainWait = 200 * time.Millisecond
	// flushEvery is how often finished pages go to the file: a gtrace
	// killed by SIGKILL loses about this much.
	flushEvery = 100 * time.Millisecond

	chunkSize = 256 << 10
	maxChunks = 128 // 32 MiB of samples per CPU waiting for the disk
)

// In a chunk, samples lie back to back as in a batch, each padded to 8
// bytes: the 16-byte sample header (u64 timestamp, u32 record length, u32
// 0) and the record. A header with length lostMark instead says that as
// many events as its timestamp field holds were lost at that point.
const lostMark = ^uint32(0)

// chunk is what a reader hands its writer: samples, or, with ack, a
// barrier that the writer closes once it has added every sample handed
// before it to the sink.
type chunk struct {
	b   []byte
	ack chan struct{}
}

// ring is what a reader needs of a *probe.Ring.
type ring interface {
	Refresh() uint64
	Next() ([]byte, bool)
	Commit()
	Size() int
}

// counters is what a reader needs of a *probe.Counters.
type counters interface {
	Load(i int) uint64
}

// reader moves one CPU's samples from its ring to its page sink.
type reader struct {
	cpu  int
	ring ring
	lost counters
	sink PageSink

	// tail is what the CPU's batch held when the programs were
	// detached: the last samples, read after the ring's.
	tail []byte

	full chan chunk  // chunks for the writer, closed when the reader ends
	free chan []byte // chunks the writer is done with
	// sync asks the reader for a barrier: a look at the ring, then the
	// ack, closed by the writer once the samples are in the sink.
	sync chan chan struct{}
	// done is closed when the writer has ended.
	done chan struct{}
	// snap, when not nil, is told of each snapshot mark the writer
	// meets, with its timestamp; a mark is an error without it.
	snap func(cpu int, ts uint64)

	// Owned by the reader goroutine.
	cur      []byte // the chunk being filled; nil if none
	chunks   int    // chunks allocated
	lostSeen uint64 // lost events already marked in a chunk

	// Owned by the writer goroutine until it ends.
	first   uint64              // the first timestamp written
	last    uint64              // the last timestamp written
	pids    map[uint32]struct{} // every common_pid written
	lastPID uint32

	// Read by the status line meanwhile.
	events      atomic.Uint64
	bytes       atomic.Uint64
	lostWritten atomic.Uint64
}

func newReader(cpu int, r ring, lost counters, sink PageSink) *reader {
	return &reader{
		cpu: cpu, ring: r, lost: lost, sink: sink,
		full:    make(chan chunk, maxChunks),
		free:    make(chan []byte, maxChunks),
		sync:    make(chan chan struct{}, 1),
		done:    make(chan struct{}),
		pids:    map[uint32]struct{}{},
		lastPID: ^uint32(0),
	}
}

// run polls until stop is closed, then drains the ring and closes full.
func (r *reader) run(stop <-chan struct{}) {
	defer close(r.full)
	wait := minWait
	last := time.Now()
	for {
		var ack chan struct{}
		select {
		case <-stop:
			r.finish()
			return
		case ack = <-r.sync:
		default:
		}
		pending, _, blocked := r.poll()
		if ack != nil {
			r.full <- chunk{ack: ack}
		}
		now := time.Now()
		if blocked {
			wait = minWait // the writer is behind: give it time
		} else {
			wait = nextWait(wait, pending, now.Sub(last), r.ring.Size())
		}
		last = now
		if wait >= spinWait {
			time.Sleep(wait)
		}
	}
}

// nextWait returns how long to sleep after a look at a ring of size bytes
// that found pending bytes, elapsed after the previous look, which slept
// prev.
func nextWait(prev time.Duration, pending uint64, elapsed time.Duration, size int) time.Duration {
	if pending == 0 {
		return min(max(2*prev, minWait), maxWait)
	}
	// The time to fill an eighth of the ring at the rate seen.
	return min(time.Duration(float64(elapsed)*float64(size/8)/float64(pending)), maxWait)
}

// poll copies the batches the ring holds into chunks, then marks the
// events lost since the last poll: the ring was full when they were lost,
// so they came after every batch it held then. It returns the bytes that
// were pending, the batches copied, and whether it stopped for want of a
// free chunk.
func (r *reader) poll() (pending uint64, n int, blocked bool) {
	lost := r.lost.Load(r.cpu)
	pending = r.ring.Refresh()
	for {
		if !r.room(bpfgen.BatchData) {
			blocked = true
			break
		}
		b, ok := r.ring.Next()
		if !ok {
			break
		}
		r.cur = append(r.cur, b[:min(len(b), bpfgen.BatchData)]...)
		n++
		if n&63 == 0 {
			r.ring.Commit()
		}
	}
	r.ring.Commit()
	if lost > r.lostSeen && r.room(bpfgen.SampleHeader) {
		var mark [bpfgen.SampleHeader]byte
		binary.LittleEndian.PutUint64(mark[:], lost-r.lostSeen)
		binary.LittleEndian.PutUint32(mark[8:], lostMark)
		r.cur = append(r.cur, mark[:]...)
		r.lostSeen = lost
	}
	if len(r.cur) > 0 {
		r.full <- chunk{b: r.cur}
		r.cur = nil
	}
	return pending, n, blocked
}

// room makes sure the current chunk has room for n more bytes, handing a
// fuller one on, and reports whether it could.
func (r *reader) room(n int) bool {
	if r.cur != nil && cap(r.cur)-len(r.cur) >= n {
		return true
	}
	if len(r.cur) > 0 {
		r.full <- chunk{b: r.cur}
	}
	r.cur = nil
	select {
	case c := <-r.free:
		r.cur = c[:0]
	default:
		if r.chunks == maxChunks {
			return false
		}
		r.chunks++
		r.cur = make([]byte, 0, chunkSize)
	}
	return true
}

// finish drains what the programs wrote before they were detached, then
// hands on the tail. It waits for the writer as long as it has to, but
// gives up on a batch still reserved after drainWait.
func (r *reader) finish() {
	deadline := time.Now().Add(drainWait)
	for {
		pending, n, blocked := r.poll()
		if (pending == 0 && !blocked) || (n == 0 && !blocked && time.Now().After(deadline)) {
			break
		}
		if n == 0 {
			time.Sleep(minWait)
		}
	}
	for len(r.tail) > 0 {
		if !r.room(len(r.tail)) {
			time.Sleep(minWait)
			continue
		}
		r.cur = append(r.cur, r.tail...)
		r.full <- chunk{b: r.cur}
		r.cur, r.tail = nil, nil
	}
}

// write turns the chunks' samples into pages until the reader closes
// full, then flushes the sink, and closes done. After an error it goes on taking chunks,
// so that the reader never waits, and returns the error at the end.
func (r *reader) write() error {
	defer close(r.done)
	var err error
	flushed := time.Now()
	cs, _ := r.sink.(ChunkSink)
	for ch := range r.full {
		if ch.ack != nil {
			close(ch.ack)
			continue
		}
		c := ch.b
		if err == nil {
			err = r.writeChunk(c)
		}
		if err == nil && cs != nil {
			err = cs.EndChunk()
		}
		r.free <- c
		// Let a reader whose sleep is over have this P: with GOMAXPROCS
		// Ps and as many busy writers, it would wait for the scheduler
		// to preempt one, up to 10 ms.
		runtime.Gosched()
		if now := time.Now(); err == nil && now.Sub(flushed) >= flushEvery {
			err = r.sink.FlushPages()
			flushed = now
		}
	}
	if err != nil {
		return err
	}
	return r.sink.Flush()
}

// writeChunk adds the records of a chunk to the sink.
func (r *reader) writeChunk(c []byte) error {
	var n, bytes uint64
	defer func() {
		r.events.Add(n)
		r.bytes.Add(bytes)
	}()
	for off := 0; off+bpfgen.SampleHeader <= len(c); {
		ts := binary.LittleEndian.Uint64(c[off:])
		size := binary.LittleEndian.Uint32(c[off+8:])
		off += bpfgen.SampleHeader
		if size == lostMark {
			r.sink.Lost(ts)
			r.lostWritten.Add(ts)
			continue
		}
		if size == bpfgen.SnapshotMark {
			if r.snap == nil {
				return fmt.Errorf("a snapshot mark at offset %d of a recording without snapshots", off-bpfgen.SampleHeader)
			}
			r.snap(r.cpu, ts)
			continue
		}
		if int(size) > len(c)-off {
			return fmt.Errorf("corrupt sample at offset %d: %d bytes long, %d left", off, size, len(c)-off)
		}
		rec := c[off : off+int(size)]
		off += (int(size) + 7) &^ 7
		if r.first == 0 {
			r.first = ts
		}
		r.last = ts
		if len(rec) >= 8 {
			if pid := binary.LittleEndian.Uint32(rec[4:]); pid != r.lastPID {
				r.pids[pid] = struct{}{}
				r.lastPID = pid
			}
		}
		if err := r.sink.Add(ts, rec); err != nil {
			return err
		}
		n++
		bytes += uint64(size)
	}
	return nil
}

// stats returns the reader's counts; call it after the writer ended.
func (r *reader) stats() CPUStats {
	return CPUStats{
		CPU:    r.cpu,
		Events: r.events.Load(),
		Bytes:  r.bytes.Load(),
		Lost:   r.lostWritten.Load(),
		First:  r.first,
		Last:   r.last,
	}
}
