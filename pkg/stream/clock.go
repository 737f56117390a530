package stream

import (
	"golang.org/x/sys/unix"

	"github.com/gtrace/gtrace/pkg/bpfgen"
)

// ClockNow returns a function that reads, in ns, the clock whose time
// the BPF helpers of c give: CLOCK_MONOTONIC for mono, CLOCK_BOOTTIME
// for boot, CLOCK_TAI for tai.
func ClockNow(c bpfgen.Clock) func() uint64 {
	id := int32(unix.CLOCK_MONOTONIC)
	switch c {
	case bpfgen.ClockBoot:
		id = unix.CLOCK_BOOTTIME
	case bpfgen.ClockTAI:
		id = unix.CLOCK_TAI
	}
	return func() uint64 {
		var ts unix.Timespec
		if unix.ClockGettime(id, &ts) != nil {
			return 0
		}
		return uint64(ts.Nano())
	}
}
