package tracingmap

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"testing"
)

func key16(a, b uint64) []byte {
	k := make([]byte, 16)
	binary.LittleEndian.PutUint64(k, a)
	binary.LittleEndian.PutUint64(k[8:], b)
	return k
}

func TestNewRoundsCapacity(t *testing.T) {
	for _, tc := range []struct{ in, cap int }{{1, 1}, {2, 2}, {3, 4}, {128, 128}, {129, 256}, {2000, 2048}} {
		m := New(8, 0, tc.in)
		if m.Cap() != tc.cap || len(m.slots) != 2*tc.cap {
			t.Errorf("New(8, 0, %d): Cap() = %d, %d slots, want %d, %d", tc.in, m.Cap(), len(m.slots), tc.cap, 2*tc.cap)
		}
	}
}

func TestNewPanics(t *testing.T) {
	for _, tc := range []struct{ keySize, nVals, capacity int }{{0, 0, 8}, {8, -1, 8}, {8, 0, 0}, {8, 0, MaxCapacity + 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%d, %d, %d) did not panic", tc.keySize, tc.nVals, tc.capacity)
				}
			}()
			New(tc.keySize, tc.nVals, tc.capacity)
		}()
	}
}

func TestInsert(t *testing.T) {
	m := New(16, 2, 4)
	a := m.InsertComm(key16(1, 2), "bash")
	if a == nil {
		t.Fatal("Insert of a new key in an empty map = nil")
	}
	a.Add(0, 1)
	a.Add(1, 10)
	a.Add(2, 1<<63)
	if b := m.InsertComm(key16(1, 2), "other"); b != a {
		t.Fatalf("second Insert of a key = %p, want the first element %p", b, a)
	}
	a.Add(0, 1)
	a.Add(2, 1<<63) // wraps
	if got := []uint64{a.Sum(0), a.Sum(1), a.Sum(2)}; got[0] != 2 || got[1] != 10 || got[2] != 0 {
		t.Errorf("sums = %v, want [2 10 0]", got)
	}
	if a.Comm() != "bash" || string(a.Key()) != string(key16(1, 2)) {
		t.Errorf("Comm(), Key() = %q, %x, want the first insert's", a.Comm(), a.Key())
	}
	for i := range uint64(3) {
		if m.Insert(key16(i+10, 0)) == nil {
			t.Fatalf("Insert %d into a map of 4 = nil", i+2)
		}
	}
	if m.Len() != 4 || m.Drops() != 0 {
		t.Fatalf("Len(), Drops() = %d, %d, want 4, 0", m.Len(), m.Drops())
	}
	for range 3 {
		if e := m.Insert(key16(99, 0)); e != nil {
			t.Fatalf("Insert of a new key into a full map = %p, want nil", e)
		}
	}
	if m.Insert(key16(1, 2)) != a {
		t.Error("Insert of a present key into a full map did not find it")
	}
	if m.Len() != 4 || m.Drops() != 3 {
		t.Errorf("Len(), Drops() = %d, %d, want 4, 3", m.Len(), m.Drops())
	}
	m.AddDropped(1, 5)
	m.AddDropped(2, 7)
	m.AddDropped(1, 6)
	if got := []uint64{m.DroppedSum(0), m.DroppedSum(1), m.DroppedSum(2)}; got[0] != 3 || got[1] != 11 || got[2] != 7 {
		t.Errorf("DroppedSum(0..2) = %v, want [3 11 7]", got)
	}
	es := m.Entries()
	if len(es) != 4 || string(es[0].Key) != string(key16(1, 2)) || es[0].Sums[0] != 2 || es[0].Comm != "bash" {
		t.Errorf("Entries() = %+v, want 4 entries, the first {1 2} with hitcount 2 and comm bash", es)
	}
}

// TestConcurrentTotals inserts the same keys from 8 goroutines at once:
// every key ends up once in Entries, with every goroutine's sums.
func TestConcurrentTotals(t *testing.T) {
	const (
		workers = 8
		keys    = 1000
		rounds  = 50
	)
	m := New(16, 1, 1024)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			k := make([]byte, 16)
			for r := range rounds {
				for i := range keys {
					// Each goroutine walks the keys from its own start.
					j := uint64((i + w*keys/workers) % keys)
					binary.LittleEndian.PutUint64(k, j)
					binary.LittleEndian.PutUint64(k[8:], j*j)
					e := m.InsertComm(k, "w")
					if e == nil {
						t.Errorf("worker %d round %d: Insert(%d) = nil", w, r, j)
						return
					}
					e.Add(0, 1)
					e.Add(1, j)
				}
			}
		})
	}
	wg.Wait()
	if m.Drops() != 0 {
		t.Errorf("Drops() = %d, want 0", m.Drops())
	}
	es := m.Entries()
	if len(es) != keys {
		t.Fatalf("len(Entries()) = %d, want %d", len(es), keys)
	}
	seen := make(map[uint64]bool)
	for _, e := range es {
		j := binary.LittleEndian.Uint64(e.Key)
		if seen[j] || binary.LittleEndian.Uint64(e.Key[8:]) != j*j {
			t.Fatalf("entry key %x: duplicate or damaged", e.Key)
		}
		seen[j] = true
		if e.Sums[0] != workers*rounds || e.Sums[1] != j*workers*rounds || e.Comm != "w" {
			t.Errorf("key %d: sums %v comm %q, want [%d %d] w", j, e.Sums, e.Comm, workers*rounds, j*workers*rounds)
		}
	}
}

// TestConcurrentFull overfills a map from 8 goroutines with keys of their
// own: exactly Cap keys get in, and every event of every other key is a
// drop.
func TestConcurrentFull(t *testing.T) {
	const (
		workers = 8
		perW    = 64 // keys per goroutine: 512 for a map of 256
		rounds  = 20
	)
	m := New(8, 0, 256)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			k := make([]byte, 8)
			for range rounds {
				for i := range perW {
					binary.LittleEndian.PutUint64(k, uint64(w*perW+i))
					if e := m.Insert(k); e != nil {
						e.Add(0, 1)
					}
				}
			}
		})
	}
	wg.Wait()
	es := m.Entries()
	if len(es) != 256 || m.Len() != 256 {
		t.Fatalf("len(Entries()), Len() = %d, %d, want 256, 256", len(es), m.Len())
	}
	for _, e := range es {
		if e.Sums[0] != rounds {
			t.Errorf("key %d: hitcount %d, want %d (a key is in from its first event or never)", binary.LittleEndian.Uint64(e.Key), e.Sums[0], rounds)
		}
	}
	if want := uint64((workers*perW - 256) * rounds); m.Drops() != want {
		t.Errorf("Drops() = %d, want %d", m.Drops(), want)
	}
}

// TestConcurrentFullShared overfills a map with keys that all goroutines
// insert: which keys get in depends on timing, but every event is counted
// or dropped, and the map holds at most Cap keys.
func TestConcurrentFullShared(t *testing.T) {
	const (
		workers = 8
		keys    = 300
		rounds  = 20
	)
	m := New(8, 0, 128)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			k := make([]byte, 8)
			for range rounds {
				for i := range keys {
					binary.LittleEndian.PutUint64(k, uint64((i+w*37)%keys))
					if e := m.Insert(k); e != nil {
						e.Add(0, 1)
					}
				}
			}
		})
	}
	wg.Wait()
	var hits uint64
	es := m.Entries()
	for _, e := range es {
		hits += e.Sums[0]
	}
	if len(es) > 128 || hits+m.Drops() != workers*keys*rounds {
		t.Errorf("%d entries, hits %d + drops %d, want <= 128 entries and %d events", len(es), hits, m.Drops(), workers*keys*rounds)
	}
}

// TestDuplicateMerged stages the race of the seed: an insert has claimed
// a slot by hash but not published its element when another insert of
// the same key comes. The second one gives up waiting and takes a second
// element; Entries merges the two.
func TestDuplicateMerged(t *testing.T) {
	m := New(16, 1, 8)
	key := key16(7, 7)
	h := maphash.Bytes(m.seed, key)
	if h == 0 {
		h = 1
	}
	first := &m.slots[(h>>m.shift)&uint64(len(m.slots)-1)]
	first.hash.Store(h) // claimed, element not yet published

	second := m.InsertComm(key, "second")
	if second == nil {
		t.Fatal("Insert during a pending insert of the same key = nil")
	}
	second.Add(0, 1)
	second.Add(1, 5)

	// The first insert completes, as InsertComm would have.
	e := &m.elts[m.next.Add(1)-1]
	copy(e.key, key)
	e.comm = "first"
	first.elt.Store(e)
	if got := m.Insert(key); got != e {
		t.Fatalf("Insert after both = %p, want the element of the first slot %p", got, e)
	}
	e.Add(0, 2)
	e.Add(1, 10)

	n := 0
	for range m.All() {
		n++
	}
	if n != 2 || m.Len() != 2 {
		t.Fatalf("All() yields %d elements, Len() = %d, want 2 and 2", n, m.Len())
	}
	es := m.Entries()
	if len(es) != 1 || es[0].Sums[0] != 3 || es[0].Sums[1] != 15 || es[0].Comm != "second" {
		t.Errorf("Entries() = %+v, want one entry with sums [3 15] and the comm of the element taken first", es)
	}
}

// TestConcurrentTinyMaps races 8 goroutines to overfill maps of 1 and 4
// elements, so that inserts claim slots after the last element is gone
// and, with 1 element, every slot of the table gets claimed: Insert must
// still end, keep the capacity and count every event once.
func TestConcurrentTinyMaps(t *testing.T) {
	const workers = 8
	for _, capacity := range []int{1, 4} {
		for range 200 {
			m := New(8, 0, capacity)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					k := make([]byte, 8)
					<-start
					for i := range 4 {
						binary.LittleEndian.PutUint64(k, uint64(w*4+i))
						if e := m.Insert(k); e != nil {
							e.Add(0, 1)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			var hits uint64
			es := m.Entries()
			for _, e := range es {
				hits += e.Sums[0]
			}
			if len(es) != capacity || hits != uint64(capacity) || m.Drops() != uint64(workers*4-capacity) {
				t.Fatalf("capacity %d: %d entries, hits %d, drops %d, want %d, %d, %d", capacity, len(es), hits, m.Drops(), capacity, capacity, workers*4-capacity)
			}
		}
	}
}
