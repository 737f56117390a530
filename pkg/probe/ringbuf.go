package probe

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// A BPF ring buffer, as the kernel lays it out for mmap
// (kernel/bpf/ringbuf.c): one page holding the consumer position, which
// user space writes; one page holding the producer position; then the data
// area, mapped twice in a row so that a record that wraps around the end
// reads as one piece. Each record starts with an 8-byte header: a u32
// length with the busy and discard bits on top, and a u32 page offset that
// only the kernel uses. Records take their length plus the header, rounded
// up to 8 bytes.
const (
	ringBusy   = 1 << 31
	ringDrop   = 1 << 30
	ringHeader = 8
)

// Ring reads one BPF ring buffer through its memory: no system call and
// no allocation per record, and no wakeups (the programs submit with
// BPF_RB_NO_WAKEUP; the caller polls). It is not safe for concurrent use.
//
// A read goes: Refresh to see what the producer has committed, Next until
// it returns false, Commit to hand the space back to the producer.
type Ring struct {
	m     *ebpf.Map
	cons  []byte // the consumer page, read-write
	area  []byte // the producer page and the data area twice, read-only
	data  []byte // area past the producer page
	mask  uint64
	cpos  *uint64 // consumer position, in cons
	ppos  *uint64 // producer position, in area
	pos   uint64  // the next record to read
	limit uint64  // the producer position seen by Refresh
}

// NewRing maps a BPF_MAP_TYPE_RINGBUF map for reading. The Ring owns m
// from then on and closes it.
func NewRing(m *ebpf.Map) (*Ring, error) {
	size := uint64(m.MaxEntries())
	page := os.Getpagesize()
	if size == 0 || size&(size-1) != 0 || size%uint64(page) != 0 {
		return nil, fmt.Errorf("map ring buffer: size %d is not a power of two multiple of the page size", size)
	}
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map ring buffer consumer page: %w", err)
	}
	area, err := unix.Mmap(m.FD(), int64(page), page+2*int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		_ = unix.Munmap(cons)
		return nil, fmt.Errorf("map ring buffer data (%d bytes): %w", 2*size, err)
	}
	r := &Ring{
		m:    m,
		cons: cons,
		area: area,
		data: area[page:],
		mask: size - 1,
		cpos: (*uint64)(unsafe.Pointer(&cons[0])),
		ppos: (*uint64)(unsafe.Pointer(&area[0])),
	}
	r.pos = atomic.LoadUint64(r.cpos)
	r.limit = r.pos
	return r, nil
}

// Size returns the bytes of the ring's data area.
func (r *Ring) Size() int { return int(r.mask + 1) }

// Refresh reads the producer position, up to which Next reads, and
// returns how many bytes the ring holds unread.
func (r *Ring) Refresh() uint64 {
	r.limit = atomic.LoadUint64(r.ppos)
	return r.limit - r.pos
}

// Next returns the next committed record up to the position Refresh saw,
// skipping discarded ones. It returns false at that position, and at a
// record that is still being written (its producer has reserved but not
// yet submitted it): Refresh and Next again later. The record aliases the
// ring and is valid until Commit.
func (r *Ring) Next() ([]byte, bool) {
	for r.pos < r.limit {
		off := r.pos & r.mask
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[off])))
		if hdr&ringBusy != 0 {
			return nil, false
		}
		n := uint64(hdr &^ (ringBusy | ringDrop))
		r.pos += (n + ringHeader + 7) &^ 7
		if hdr&ringDrop != 0 {
			continue
		}
		start := off + ringHeader
		return r.data[start : start+n : start+n], true
	}
	return nil, false
}

// Commit gives the space of the records read so far back to the producer.
func (r *Ring) Commit() { atomic.StoreUint64(r.cpos, r.pos) }

// Close unmaps the ring and closes its map.
func (r *Ring) Close() error {
	return errors.Join(unix.Munmap(r.cons), unix.Munmap(r.area), r.m.Close())
}

// OpenRings creates a ring buffer of size bytes for each CPU of cpus,
// stores it at that CPU's index of the ARRAY_OF_MAPS named outer, and maps
// it for reading. rings[i] is the ring of cpus[i].
func (o *Objects) OpenRings(outer string, cpus []int, size int) (rings []*Ring, err error) {
	om := o.Map(outer)
	if om == nil {
		return nil, fmt.Errorf("open ring buffers: no map %q", outer)
	}
	defer func() {
		if err != nil {
			for _, r := range rings {
				r.Close()
			}
			rings = nil
		}
	}()
	for _, cpu := range cpus {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Name: fmt.Sprintf("ring%d", cpu), Type: ebpf.RingBuf, MaxEntries: uint32(size)})
		if err != nil {
			return rings, explain(fmt.Sprintf("create the ring buffer of CPU %d (%d KiB)", cpu, size>>10), err)
		}
		if err := om.Put(uint32(cpu), m); err != nil {
			m.Close()
			return rings, fmt.Errorf("install the ring buffer of CPU %d: %w", cpu, err)
		}
		r, err := NewRing(m)
		if err != nil {
			m.Close()
			return rings, err
		}
		rings = append(rings, r)
	}
	return rings, nil
}

// Counters is an array map of u64 counters, mapped read-only: reading a
// counter is a memory load.
type Counters struct {
	mem []byte
	n   int
}

// MapCounters maps the BPF_F_MMAPABLE array of u64 named name.
func (o *Objects) MapCounters(name string) (*Counters, error) {
	m := o.Map(name)
	if m == nil || m.ValueSize() != 8 {
		return nil, fmt.Errorf("map counters: no u64 array %q", name)
	}
	n := int(m.MaxEntries())
	page := os.Getpagesize()
	mem, err := unix.Mmap(m.FD(), 0, (n*8+page-1)/page*page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map counters %s: %w", name, err)
	}
	return &Counters{mem: mem, n: n}, nil
}

// Load returns counter i.
func (c *Counters) Load(i int) uint64 {
	if i < 0 || i >= c.n {
		return 0
	}
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&c.mem[8*i])))
}

// Close unmaps the counters.
func (c *Counters) Close() error { return unix.Munmap(c.mem) }

// PerCPUValue returns the value at index 0 of the per-CPU array named
// name, one per possible CPU.
func (o *Objects) PerCPUValue(name string) ([][]byte, error) {
	m := o.Map(name)
	if m == nil {
		return nil, fmt.Errorf("read map %s: no such map", name)
	}
	var vals [][]byte
	if err := m.Lookup(uint32(0), &vals); err != nil {
		return nil, fmt.Errorf("read map %s: %w", name, err)
	}
	return vals, nil
}

// RecursionMisses returns how many times the kernel skipped one of the
// collection's programs, but those named in except, because a BPF program
// was already running on that CPU: events the programs never saw.
func (o *Objects) RecursionMisses(except ...string) uint64 {
	var n uint64
	for name, p := range o.coll.Programs {
		if slices.Contains(except, name) {
			continue
		}
		if st, err := p.Stats(); err == nil {
			n += st.RecursionMisses
		}
	}
	return n
}

// OnlineCPUs returns the ids of the CPUs that are online.
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("list online CPUs: %w", err)
	}
	cpus, err := parseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("list online CPUs: %w", err)
	}
	return cpus, nil
}

// parseCPUList parses the kernel's CPU list format: "0-3,5,7-8".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
