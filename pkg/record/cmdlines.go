package record

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"

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
