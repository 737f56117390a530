package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/gtrace/gtrace/pkg/launch"
)

// Detach closes every link of the collection at once, leaving the
// programs and maps loaded. Closing the last BPF link of a tracepoint
// waits for an RCU grace period; closed together, the links share grace
// periods where the kernel lets them. Close still does the rest.
func (o *Objects) Detach() error {
	errs := make([]error, len(o.links))
	var wg sync.WaitGroup
	for i, l := range o.links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Close()
		}()
	}
	wg.Wait()
	o.links = nil
	return errors.Join(errs...)
}

// SwitchOff sets the u64 of the switch map named name (bpfgen.SwitchMap):
// every program gated on it returns at once, from its next event on.
func (o *Objects) SwitchOff(name string) error {
	m := o.Map(name)
	if m == nil {
		return fmt.Errorf("switch off: no map %q", name)
	}
	if m.ValueSize() == 8 {
		if err := m.Put(uint32(0), uint64(1)); err != nil {
			return fmt.Errorf("switch off: %w", err)
		}
		return nil
	}
	// A control map (bpfgen.Control): word 0 is the switch. The other
	// words change no more once it is set, so the copy put back is
	// theirs, bar a firing that races with the stop.
	v := make([]byte, m.ValueSize())
	if err := m.Lookup(uint32(0), &v); err != nil {
		return fmt.Errorf("switch off: %w", err)
	}
	binary.LittleEndian.PutUint64(v, 1)
	if err := m.Put(uint32(0), v); err != nil {
		return fmt.Errorf("switch off: %w", err)
	}
	return nil
}

// Words returns the u64 words of the one-entry array map named name: a
// control map's (bpfgen.Control).
func (o *Objects) Words(name string) ([]uint64, error) {
	m := o.Map(name)
	if m == nil {
		return nil, fmt.Errorf("read %s: no such map", name)
	}
	v := make([]byte, m.ValueSize())
	if err := m.Lookup(uint32(0), &v); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	w := make([]uint64, len(v)/8)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(v[8*i:])
	}
	return w, nil
}

// DetachLater hands the collection's links to a process that closes them
// once gtrace has exited (launch.Hold), so that the kernel's teardown of
// hundreds of tracepoints, ~30 ms each, does not keep the user waiting.
// Call it once the programs no longer record anything (SwitchOff); Close
// then returns at once. If the links cannot be handed off, they are
// closed here.
func (o *Objects) DetachLater() error {
	if len(o.links) < minHandoff {
		return o.Detach()
	}
	if err := launch.Hold(kernelObjectFDs()); err != nil {
		return errors.Join(err, o.Detach())
	}
	return nil
}

// minHandoff is the fewest links worth a holder process: closing a few
// takes less time than starting one.
const minHandoff = 8

// kernelObjectFDs returns this process's descriptors of BPF links and
// perf events: the objects whose release detaches programs.
func kernelObjectFDs() []int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil
	}
	var fds []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		switch target, _ := os.Readlink("/proc/self/fd/" + e.Name()); target {
		case "anon_inode:bpf_link", "anon_inode:[perf_event]":
			fds = append(fds, fd)
		}
	}
	return fds
}
