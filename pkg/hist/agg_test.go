package hist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

func TestAggregatorDrops(t *testing.T) {
	p := plan("a:b", []Key{numKey("k", parse.ModNone)}, []parse.HistField{fld("v", parse.ModNone)})
	a := NewAggregator(p, 2)
	events := []struct {
		key  uint64
		comm string
		val  uint64
	}{
		{1, "one", 10},
		{2, "two", 20},
		{3, "three", 30}, // full: dropped
		{3, "three", 30}, // the same new key is dropped again
		{1, "later", 5},  // existing keys still update
		{4, "four", 1},   // dropped
		{2, "two", 1},
	}
	for _, e := range events {
		a.Add(keys(num(e.key)), e.comm, []uint64{e.val})
	}
	tbl := a.Table()
	if tbl.Dropped != 3 || tbl.Hits() != 4 || tbl.Hits()+tbl.Dropped != uint64(len(events)) {
		t.Errorf("Dropped, Hits = %d, %d, want 3, 4", tbl.Dropped, tbl.Hits())
	}
	want := []Entry{
		entry(2, "one", keys(num(1)), 15),
		entry(2, "two", keys(num(2)), 21),
	}
	if !entriesEqual(tbl.Entries, want) {
		t.Errorf("Entries = %+v, want %+v", tbl.Entries, want)
	}
}

func entriesEqual(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Comm != y.Comm || x.Hitcount != y.Hitcount || len(x.Keys) != len(y.Keys) || len(x.Vals) != len(y.Vals) {
			return false
		}
		for j := range x.Keys {
			if x.Keys[j] != y.Keys[j] {
				return false
			}
		}
		for j := range x.Vals {
			if x.Vals[j] != y.Vals[j] {
				return false
			}
		}
	}
	return true
}

func TestAggregatorUpdates(t *testing.T) {
	p := plan("a:b", []Key{strKey("comm"), sgnKey("common_pid", parse.ModExecname)}, []parse.HistField{fld("x", parse.ModNone), fld("y", parse.ModHex)})
	a := NewAggregator(p, 0)
	if a.capacity != p.Size {
		t.Errorf("NewAggregator(p, 0) capacity = %d, want Plan.Size %d", a.capacity, p.Size)
	}
	a.Add(keys(str("sh"), neg(-1)), "a-very-long-task-name", []uint64{math.MaxUint64, 1})
	a.Add(keys(str("sh"), neg(-1)), "other", []uint64{2, 2})             // wraps; comm kept from creation
	a.Add(keys(str("sh\x00"), neg(-1)), "third", []uint64{0, 0})         // a different key tuple
	a.Add(keys(str("s"), num(math.MaxUint64)), "fourth", []uint64{0, 0}) // the same number, another string
	want := []Entry{
		entry(2, "a-very-long-tas", keys(str("sh"), neg(-1)), 1, 3),
		entry(1, "third", keys(str("sh\x00"), neg(-1)), 0, 0),
		entry(1, "fourth", keys(str("s"), neg(-1)), 0, 0),
	}
	tbl := a.Table()
	if !entriesEqual(tbl.Entries, want) || tbl.Dropped != 0 {
		t.Errorf("Entries = %+v, Dropped %d, want %+v", tbl.Entries, tbl.Dropped, want)
	}

	// Table is a copy: neither later Adds nor changes to it touch the other.
	tbl.Entries[0].Vals[0] = 99
	tbl.Entries[0].Keys[0].Str = "changed"
	a.Add(keys(str("sh"), neg(-1)), "", []uint64{1, 1})
	if got := a.Table().Entries[0]; got.Vals[0] != 2 || got.Keys[0].Str != "sh" || got.Hitcount != 3 {
		t.Errorf("after editing a Table copy, entry = %+v, want sh/-1 hitcount 3 x 2", got)
	}
	if tbl.Entries[0].Hitcount != 2 {
		t.Errorf("an Add changed an earlier Table: hitcount %d, want 2", tbl.Entries[0].Hitcount)
	}
}

func TestAggregatorBuckets(t *testing.T) {
	p := plan("a:b", []Key{numKey("lat", parse.ModLog2), bucketsKey("size", 10)}, nil)
	tests := []struct {
		lat, size   uint64
		log2, start uint64
	}{
		{0, 0, 0, 0},
		{1, 9, 0, 0},
		{2, 10, 1, 10},
		{3, 19, 2, 10},
		{4, 20, 2, 20},
		{100, 12345, 7, 12340},
		{4096, 1, 12, 0},
		{4097, 1, 13, 0},
		{1 << 63, 1, 63, 0},
		{1<<63 + 1, 1, 64, 0},
		{math.MaxUint64, math.MaxUint64, 64, math.MaxUint64 / 10 * 10},
	}
	for _, tt := range tests {
		a := NewAggregator(p, 1)
		a.Add(keys(num(tt.lat), num(tt.size)), "", nil)
		got := a.Table().Entries[0].Keys
		if got[0].Num != tt.log2 || got[1].Num != tt.start {
			t.Errorf("Add(lat %d, size %d): keys %d, %d, want %d, %d", tt.lat, tt.size, got[0].Num, got[1].Num, tt.log2, tt.start)
		}
	}
	// Values in the same bucket share an entry.
	a := NewAggregator(p, 1)
	a.Add(keys(num(5), num(11)), "", nil)
	a.Add(keys(num(8), num(19)), "", nil)
	if tbl := a.Table(); len(tbl.Entries) != 1 || tbl.Entries[0].Hitcount != 2 || tbl.Dropped != 0 {
		t.Errorf("5/11 and 8/19 gave %+v, dropped %d, want one entry with hitcount 2", tbl.Entries, tbl.Dropped)
	}
}

// TestAggregatorModel checks the aggregator against a plain map on random
// events with a small capacity.
func TestAggregatorModel(t *testing.T) {
	p := plan("a:b", []Key{numKey("k", parse.ModNone), strKey("s")}, []parse.HistField{fld("v", parse.ModNone)})
	type key struct {
		k uint64
		s string
	}
	const capacity = 16
	rng := rand.New(rand.NewPCG(7, 8))
	a := NewAggregator(p, capacity)
	model := map[key]*Entry{}
	var dropped uint64
	for range 5000 {
		k := key{rng.Uint64N(8), string(rune('a' + rng.IntN(4)))}
		v := rng.Uint64()
		a.Add(keys(num(k.k), str(k.s)), "c", []uint64{v})
		if e, ok := model[k]; ok {
			e.Hitcount++
			e.Vals[0] += v
		} else if len(model) < capacity {
			model[k] = &Entry{Hitcount: 1, Vals: []uint64{v}}
		} else {
			dropped++
		}
	}
	tbl := a.Table()
	if len(tbl.Entries) != len(model) || tbl.Dropped != dropped {
		t.Fatalf("entries, dropped = %d, %d, want %d, %d", len(tbl.Entries), tbl.Dropped, len(model), dropped)
	}
	for _, e := range tbl.Entries {
		m := model[key{e.Keys[0].Num, e.Keys[1].Str}]
		if m == nil || m.Hitcount != e.Hitcount || m.Vals[0] != e.Vals[0] {
			t.Errorf("entry %+v, model %+v", e, m)
		}
	}
}

func TestAggregatorAddAllocs(t *testing.T) {
	p := plan("a:b", []Key{numKey("k", parse.ModLog2), strKey("s")}, []parse.HistField{fld("v", parse.ModNone)})
	a := NewAggregator(p, 1)
	kv, vals := keys(num(100), str("bash")), []uint64{1}
	a.Add(kv, "bash", vals)
	if n := testing.AllocsPerRun(100, func() { a.Add(kv, "bash", vals) }); n != 0 {
		t.Errorf("Add on an existing key: %v allocations, want 0", n)
	}
	kv2 := keys(num(1), str("dropped"))
	if n := testing.AllocsPerRun(100, func() { a.Add(kv2, "x", vals) }); n != 0 {
		t.Errorf("Add of a dropped key: %v allocations, want 0", n)
	}
}
