package tracedat

import (
	"encoding/binary"
	"fmt"
)

// DataSize returns how many bytes of pages one CPU's data holds once
// decompressed: its Size when the top instance is not compressed, else the
// sum of the uncompressed sizes of its chunks, read from their headers.
func (f *File) DataSize(c CPUData) (int64, error) {
	top := f.topIndex
	if top < 0 || top >= len(f.Buffers) || !f.Buffers[top].Compressed || c.Size == 0 {
		return c.Size, nil
	}
	var order binary.ByteOrder = binary.LittleEndian
	if f.BigEndian {
		order = binary.BigEndian
	}
	var hdr [8]byte
	if _, err := f.r.ReadAt(hdr[:4], c.Offset); err != nil {
		return 0, fmt.Errorf("cpu %d: chunk count at offset %#x: %w", c.CPU, c.Offset, ErrTruncated)
	}
	chunks := order.Uint32(hdr[:4])
	off := c.Offset + 4
	var total int64
	for i := uint32(0); i < chunks; i++ {
		if _, err := f.r.ReadAt(hdr[:], off); err != nil {
			return 0, fmt.Errorf("cpu %d: chunk header at offset %#x: %w", c.CPU, off, ErrTruncated)
		}
		csize, usize := order.Uint32(hdr[:4]), order.Uint32(hdr[4:])
		total += int64(usize)
		off += 8 + int64(csize)
		if off > f.size {
			return 0, fmt.Errorf("cpu %d: chunk at offset %#x runs past the end of the file: %w", c.CPU, off-8-int64(csize), ErrTruncated)
		}
	}
	return total, nil
}
