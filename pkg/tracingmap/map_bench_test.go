package tracingmap

import (
	"sync/atomic"
	"testing"
)

// benchKeys returns n 16-byte keys shaped like a (common_pid, id) hist key.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key16(uint64(1000+i/32), uint64(i%32))
	}
	return keys
}

// BenchmarkInsert measures one Insert of a present key and the hitcount's
// Add, in one goroutine (ns/op is ns per insert).
func BenchmarkInsert(b *testing.B) {
	keys := benchKeys(1024)
	m := New(16, 0, 2048)
	i := 0
	for b.Loop() {
		m.Insert(keys[i&1023]).Add(0, 1)
		i++
	}
}

// BenchmarkInsertParallel is BenchmarkInsert from GOMAXPROCS goroutines:
// "shared" over the same 1024 keys, each goroutine walking them from its
// own start, "own" over 1024 keys of each goroutine's own, as CPUs running
// different tasks do (ns/op is wall time per insert of all goroutines).
func BenchmarkInsertParallel(b *testing.B) {
	for _, bc := range []struct {
		name string
		own  bool
	}{{"shared", false}, {"own", true}} {
		b.Run(bc.name, func(b *testing.B) {
			keys := benchKeys(1 << 16)
			m := New(16, 0, 1<<16)
			var worker atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				w := int(worker.Add(1) - 1)
				ks := keys[:1024]
				i := w * 512
				if bc.own {
					ks = keys[w*1024 : (w+1)*1024]
				}
				for pb.Next() {
					m.Insert(ks[i&1023]).Add(0, 1)
					i++
				}
			})
		})
	}
}

// BenchmarkInsertNew measures inserts of new keys: filling a map of 2048
// (ns/op is ns per insert, allocation of the maps excluded).
func BenchmarkInsertNew(b *testing.B) {
	keys := benchKeys(2048)
	var m *Map
	i := 0
	for b.Loop() {
		if i&2047 == 0 {
			b.StopTimer()
			m = New(16, 0, 2048)
			b.StartTimer()
		}
		m.Insert(keys[i&2047]).Add(0, 1)
		i++
	}
}
