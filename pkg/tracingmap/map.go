package tracingmap

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"iter"
	"math/bits"
	"runtime"
	"sync/atomic"
)

// MaxCapacity is the largest capacity New accepts.
const MaxCapacity = 1 << 30

// sumsStride is how many u64 sums one element's block spans at least: 64
// bytes, so that elements updated from different CPUs do not share a cache
// line.
const sumsStride = 8

// waitSpins bounds how often Insert looks again at a slot whose hash
// matches but whose element is not published yet, before it moves on.
const waitSpins = 64

// Map is a fixed-capacity hash map from keys of one size to elements with
// u64 sums. The zero value is not usable; make one with New.
type Map struct {
	keySize int
	nSums   int
	cap     int64
	slots   []slot
	shift   uint // hash >> shift is the home slot
	seed    maphash.Seed

	elts  []Elt
	next  atomic.Int64 // elements taken from elts (may run past cap)
	drops atomic.Uint64
	// dropSums are the sums of values 1 to nVals over the dropped
	// inserts (AddDropped), at index i-1.
	dropSums []atomic.Uint64
	skips    atomic.Uint64 // inserts that moved past an unpublished slot of their hash
	dead     Elt           // published in slots claimed when no element was left
}

// slot is one entry of the hash table: the key's hash (0: free), claimed
// first, and the element, published once its key is in place.
type slot struct {
	hash atomic.Uint64
	elt  atomic.Pointer[Elt]
}

// Elt is one element of a Map: a key, its sums and the comm saved when it
// was inserted. Sum 0 is by convention the hit count, sums 1 to nVals the
// values.
type Elt struct {
	key  []byte
	sums []atomic.Uint64
	comm string
	idx  int // position in the pool: elements are taken in order
}

// New returns an empty map for keys of keySize bytes whose elements hold
// 1+nVals sums. capacity is rounded up to a power of two, as the kernel
// rounds a hist's size; the table has twice as many slots. Every element is
// allocated now. New panics if keySize < 1, nVals < 0 or capacity is not in
// [1, MaxCapacity].
func New(keySize, nVals, capacity int) *Map {
	if keySize < 1 || nVals < 0 || capacity < 1 || capacity > MaxCapacity {
		panic(fmt.Sprintf("tracingmap.New(%d, %d, %d): want keySize >= 1, nVals >= 0, 1 <= capacity <= %d", keySize, nVals, capacity, MaxCapacity))
	}
	capBits := bits.Len(uint(capacity - 1))
	n := 1 << capBits
	m := &Map{
		keySize:  keySize,
		nSums:    1 + nVals,
		cap:      int64(n),
		slots:    make([]slot, 2*n),
		shift:    uint(64 - (capBits + 1)),
		seed:     maphash.MakeSeed(),
		elts:     make([]Elt, n),
		dropSums: make([]atomic.Uint64, nVals),
	}
	stride := (m.nSums + sumsStride - 1) / sumsStride * sumsStride
	keys := make([]byte, n*keySize)
	sums := make([]atomic.Uint64, n*stride)
	for i := range m.elts {
		e := &m.elts[i]
		e.key = keys[i*keySize : (i+1)*keySize : (i+1)*keySize]
		e.sums = sums[i*stride : i*stride+m.nSums : i*stride+m.nSums]
		e.idx = i
	}
	return m
}

// Cap returns the capacity: the most elements the map holds.
func (m *Map) Cap() int { return int(m.cap) }

// Len returns the number of elements in use: the keys inserted, counting
// a key twice if racing inserts gave it two elements (see Entries).
func (m *Map) Len() int { return int(min(m.next.Load(), m.cap)) }

// Drops returns how many inserts of a new key found the map full.
func (m *Map) Drops() uint64 { return m.drops.Load() }

// AddDropped adds v to the sum of value i (1 to nVals, as in Elt.Add)
// over the events whose insert was dropped: the caller, whose Insert
// returned nil, adds its event's values.
func (m *Map) AddDropped(i int, v uint64) { m.dropSums[i-1].Add(v) }

// DroppedSum returns the sum of value i (1 to nVals) that AddDropped
// added up; DroppedSum(0), the hit count's, is Drops.
func (m *Map) DroppedSum(i int) uint64 {
	if i == 0 {
		return m.Drops()
	}
	return m.dropSums[i-1].Load()
}

// Insert returns the element of key, inserting it if it is new. It returns
// nil, and counts a drop, when key is new and the map already holds Cap
// elements. key must have the size given to New; the map keeps a copy.
func (m *Map) Insert(key []byte) *Elt { return m.InsertComm(key, "") }

// InsertComm is Insert that saves comm in the element if the key is new.
func (m *Map) InsertComm(key []byte, comm string) *Elt {
	if len(key) != m.keySize {
		panic(fmt.Sprintf("tracingmap: key of %d bytes in a map of %d-byte keys", len(key), m.keySize))
	}
	h := maphash.Bytes(m.seed, key)
	if h == 0 {
		h = 1
	}
	mask := uint64(len(m.slots) - 1)
	idx := h >> m.shift
	// Claimed slots are never freed, so a key already present sits before
	// the first free slot of its probe sequence. Each slot is passed at
	// most once; a failed claim looks at the same slot again, which
	// happens at most once per slot since slots are claimed only once.
	for passed := 0; passed < len(m.slots); {
		s := &m.slots[idx&mask]
		switch sh := s.hash.Load(); sh {
		case h:
			e := s.elt.Load()
			if e == nil {
				e = m.wait(s)
			}
			if e != nil && bytes.Equal(e.key, key) {
				return e
			}
			if e == nil {
				// Another insert of this hash, maybe of this key, is
				// still under way: go on, at the risk of a duplicate.
				m.skips.Add(1)
			}
		case 0:
			if m.next.Load() >= m.cap {
				m.drops.Add(1)
				return nil
			}
			if !s.hash.CompareAndSwap(0, h) {
				continue // look at what was claimed: perhaps this key
			}
			i := m.next.Add(1) - 1
			if i >= m.cap {
				// Another insert took the last element since the check
				// above. The slot stays claimed; mark it dead so that
				// nobody waits for it.
				s.elt.Store(&m.dead)
				m.drops.Add(1)
				return nil
			}
			e := &m.elts[i]
			copy(e.key, key)
			e.comm = comm
			s.elt.Store(e)
			return e
		}
		idx++
		passed++
	}
	m.drops.Add(1)
	return nil
}

// wait gives the insert that claimed s a moment to publish its element.
func (m *Map) wait(s *slot) *Elt {
	for i := range waitSpins {
		if i >= 4 {
			runtime.Gosched()
		}
		if e := s.elt.Load(); e != nil {
			return e
		}
	}
	return nil
}

// All yields every published element once, in the order the elements were
// taken. A key that racing inserts gave two elements is yielded twice;
// Entries merges them. All may run while inserts go on; it then yields
// some of the elements they add.
func (m *Map) All() iter.Seq[*Elt] {
	return func(yield func(*Elt) bool) {
		byIdx := make([]*Elt, m.Len())
		for i := range m.slots {
			if e := m.slots[i].elt.Load(); e != nil && e != &m.dead && e.idx < len(byIdx) {
				byIdx[e.idx] = e
			}
		}
		for _, e := range byIdx {
			if e != nil && !yield(e) {
				return
			}
		}
	}
}

// Entry is a copy of one key's element: the key, its sums and its comm.
type Entry struct {
	Key  []byte
	Sums []uint64
	Comm string
}

// Entries returns a copy of every key's element, in the order the keys
// were inserted. Elements that hold the same key are merged: their sums
// are added and the comm is the first element's.
func (m *Map) Entries() []Entry {
	n := m.Len()
	keys := make([]byte, 0, n*m.keySize)
	sums := make([]uint64, 0, n*m.nSums)
	out := make([]Entry, 0, n)
	var seen map[string]int // only when duplicates may exist
	if m.skips.Load() > 0 {
		seen = make(map[string]int, n)
	}
	for e := range m.All() {
		if seen != nil {
			if j, ok := seen[string(e.key)]; ok {
				for i := range e.sums {
					out[j].Sums[i] += e.sums[i].Load()
				}
				continue
			}
			seen[string(e.key)] = len(out)
		}
		k, s := len(keys), len(sums)
		keys = append(keys, e.key...)
		for i := range e.sums {
			sums = append(sums, e.sums[i].Load())
		}
		out = append(out, Entry{Key: keys[k:len(keys):len(keys)], Sums: sums[s:len(sums):len(sums)], Comm: e.comm})
	}
	return out
}

// Key returns the element's key. It must not be modified.
func (e *Elt) Key() []byte { return e.key }

// Comm returns the comm saved when the element was inserted.
func (e *Elt) Comm() string { return e.comm }

// Index returns the element's position among the map's elements, in
// [0, Cap): the elements are taken in order as keys are inserted. A
// goroutine can sum into an array of its own by index, and Add the totals
// to the elements at the end, instead of an atomic add per event.
func (e *Elt) Index() int { return e.idx }

// Add adds v to sum i (wrapping at 2^64), atomically.
func (e *Elt) Add(i int, v uint64) { e.sums[i].Add(v) }

// Sum returns sum i.
func (e *Elt) Sum(i int) uint64 { return e.sums[i].Load() }
