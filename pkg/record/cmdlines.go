package record

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/probe"
)

// comms reads the pid -> comm map that the comm program fills at each
// context switch.
func comms(o *probe.Objects) map[uint32]string {
	known := map[uint32]string{}
	if m := o.Map(bpfgen.CommsMapName); m != nil {
		_ = probe.ForEach(m, func(k, v []byte) {
			known[binary.NativeEndian.Uint32(k)] = commString(v)
		})
	}
	return known
}

// Comms names the tasks of a running recording, for an output that prints
// records as they come: from the comm map that the comm program fills at
// each context switch, which has the tasks that ran since the recording
// started, else from /proc. Its methods may be called from any goroutine.
// The zero value is ready; a session given it in StartOptions looks in
// its map from load to Stop, and after Stop in the map as Stop read it.
type Comms struct {
	mu   sync.Mutex
	objs *probe.Objects
	// known is the map as it was read at the end (stop): the names of
	// a recording that is over, for an output that is still writing.
	known map[uint32]string
}

// set makes c look in the comm map of objs, or in none when nil.
func (c *Comms) set(objs *probe.Objects) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.objs = objs
	c.mu.Unlock()
}

// stop makes c look in known, the comm map as read at the end, instead
// of the map, which is about to be closed.
func (c *Comms) stop(known map[uint32]string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.objs, c.known = nil, known
	c.mu.Unlock()
}

// Comm returns the name of task pid, "" if it is not known.
func (c *Comms) Comm(pid int) string {
	if pid <= 0 || pid > math.MaxUint32 {
		return ""
	}
	c.mu.Lock()
	var v [bpfgen.CommLen]byte
	found := false
	if c.objs != nil {
		if m := c.objs.Map(bpfgen.CommsMapName); m != nil {
			found = m.Lookup(uint32(pid), &v) == nil
		}
	}
	name, known := c.known[uint32(pid)]
	c.mu.Unlock()
	if known {
		return name
	}
	if found {
		return commString(v[:])
	}
	return procComm(uint32(pid))
}

// cmdlines names every pid the readers saw: from known, the comm map,
// which has the processes that have exited, else from /proc for those
// still running that have not been switched out since the recording
// started. pid 0 is left out: it is the idle task, which trace-cmd names
// itself.
func cmdlines(readers []*reader, known map[uint32]string) map[int]string {
	names := map[int]string{}
	for _, r := range readers {
		for pid := range r.pids {
			if pid == 0 || names[int(pid)] != "" {
				continue
			}
			name, ok := known[pid]
			if !ok {
				name = procComm(pid)
			}
			if name != "" {
				names[int(pid)] = name
			}
		}
	}
	return names
}

// commString returns a NUL-padded task name as a string.
func commString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) > bpfgen.CommLen {
		b = b[:bpfgen.CommLen]
	}
	return string(b)
}

// procComm reads a running task's name; "" when it is gone.
func procComm(pid uint32) string {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}
