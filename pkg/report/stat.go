package report

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/gtrace/gtrace/pkg/tracedat"
)

// Stat prints what trace-cmd report --stat prints: "cpus=N", the kernel
// buffer statistics stored in the file (its CPUSTAT options), and where
// each CPU's data is. When ctx is done, it stops (finding the size of
// compressed data can take a while) and returns context.Cause(ctx),
// having printed nothing.
func Stat(ctx context.Context, w io.Writer, f *tracedat.File) error {
	top := topBuffer(f)
	compressed := top != nil && top.Compressed
	bw := bufio.NewWriter(w)
	b := make([]byte, 0, 1024)
	b = append(b, "cpus="...)
	b = strconv.AppendInt(b, int64(cpuCount(f)), 10)
	b = append(b, "\n\nKernel buffer statistics:\n"...)
	b = append(b, "  Note: \"entries\" are the entries left in the kernel ring buffer and are not\n"...)
	b = append(b, "        recorded in the trace data. They should all be zero.\n\n"...)
	if len(f.CPUStats) == 0 {
		b = append(b, " No stats in this file\n"...)
	} else {
		for _, s := range f.CPUStats {
			b = append(b, s...)
			b = append(b, '\n')
		}
		b = append(b, '\n')
	}
	// trace-cmd lists CPUs 0 to the highest with data; v6 files list
	// every CPU of their table.
	n := 0
	if top != nil {
		for _, c := range top.CPUs {
			n = max(n, c.CPU+1)
		}
	}
	if f.Version < 7 {
		n = max(n, f.CPUCount)
	}
	// For compressed data trace-cmd shows where each CPU's pages lie once
	// decompressed: one after the other, from the first page on.
	next := int64(f.PageSize)
	for cpu := 0; cpu < n; cpu++ {
		var off, size int64
		for _, c := range f.CPUs {
			if c.CPU != cpu {
				continue
			}
			off, size = c.Offset, c.Size
			if compressed && c.Size != 0 {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				var err error
				if size, err = f.DataSize(c); err != nil {
					return fmt.Errorf("report stat: %w", err)
				}
				off = next
				next += size
			}
		}
		b = append(b, "CPU"...)
		b = strconv.AppendInt(b, int64(cpu), 10)
		b = append(b, " data recorded at offset=0x"...)
		b = strconv.AppendInt(b, off, 16)
		b = append(b, "\n    "...)
		b = strconv.AppendInt(b, size, 10)
		b = append(b, " bytes in size\n"...)
	}
	bw.Write(b)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write stat: %w", err)
	}
	return nil
}

// topBuffer returns the top instance, or nil.
func topBuffer(f *tracedat.File) *tracedat.Buffer {
	for _, b := range f.Buffers {
		if b.Name == "" {
			return b
		}
	}
	return nil
}
