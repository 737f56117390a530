package hist

import (
	"encoding/binary"
	"math/bits"

	"github.com/gtrace/gtrace/pkg/parse"
)

// commLen is the longest task name the kernel saves (TASK_COMM_LEN - 1).
const commLen = 15

// Aggregator fills a hist table in user space, one event at a time, with
// the kernel's insert/update rules. It is the reference the BPF engine is
// tested against and serves small offline jobs. It is not safe for
// concurrent use.
type Aggregator struct {
	plan     *Plan
	capacity int
	index    map[string]int // encoded key tuple -> index in entries
	entries  []Entry
	dropped  uint64
	buf      []byte // scratch for encoding key tuples
}

// NewAggregator returns an empty aggregator for p that holds at most
// capacity entries (p.Size when capacity <= 0).
func NewAggregator(p *Plan, capacity int) *Aggregator {
	if capacity <= 0 {
		capacity = p.Size
	}
	return &Aggregator{plan: p, capacity: capacity, index: make(map[string]int)}
}

// Add counts one event. keys holds one operand value per Plan.Keys, as read
// from the event (after .usecs); Add applies .log2 and .buckets=N itself.
// comm is the current task's name ("<idle>" for pid 0), saved when the
// entry is created. vals holds one field value per Plan.Vals.
//
// As in the kernel, an existing entry gets hitcount += 1 and each value
// += its field (wrapping at 2^64); a new key gets a new entry, unless the
// table already holds capacity entries, in which case the event is dropped
// and counted in Dropped.
func (a *Aggregator) Add(keys []KeyValue, comm string, vals []uint64) {
	b := a.buf[:0]
	for i := range a.plan.Keys {
		k := &a.plan.Keys[i]
		if k.Kind == KeyString {
			b = binary.AppendUvarint(b, uint64(len(keys[i].Str)))
			b = append(b, keys[i].Str...)
		} else {
			b = binary.LittleEndian.AppendUint64(b, bucket(k, keys[i].Num))
		}
	}
	a.buf = b
	if i, ok := a.index[string(b)]; ok {
		e := &a.entries[i]
		e.Hitcount++
		for j := range e.Vals {
			e.Vals[j] += vals[j]
		}
		return
	}
	if len(a.entries) >= a.capacity {
		a.dropped++
		return
	}
	e := Entry{
		Keys:     make([]KeyValue, len(a.plan.Keys)),
		Hitcount: 1,
		Vals:     make([]uint64, len(a.plan.Vals)),
	}
	for i := range a.plan.Keys {
		k := &a.plan.Keys[i]
		if k.Kind == KeyString {
			e.Keys[i].Str = keys[i].Str
		} else {
			e.Keys[i].Num = bucket(k, keys[i].Num)
		}
	}
	if len(comm) > commLen {
		comm = comm[:commLen]
	}
	e.Comm = comm
	copy(e.Vals, vals)
	a.index[string(b)] = len(a.entries)
	a.entries = append(a.entries, e)
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

// Table returns a copy of the aggregated table, entries in insertion order.
func (a *Aggregator) Table() *Table {
	t := &Table{Plan: a.plan, Entries: make([]Entry, len(a.entries)), Dropped: a.dropped}
	keys := make([]KeyValue, 0, len(a.entries)*len(a.plan.Keys))
	vals := make([]uint64, 0, len(a.entries)*len(a.plan.Vals))
	for i, e := range a.entries {
		n, m := len(keys), len(vals)
		keys = append(keys, e.Keys...)
		vals = append(vals, e.Vals...)
		e.Keys = keys[n:len(keys):len(keys)]
		e.Vals = vals[m:len(vals):len(vals)]
		t.Entries[i] = e
	}
	return t
}
