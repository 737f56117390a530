package tracedat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxString bounds the NUL-terminated strings of the metadata (names,
// clocks, compression names); longer ones are reported as corrupt.
const maxString = 4096

// decoder reads metadata sequentially, either from the file (r != nil,
// pos is a file offset) or from a decompressed section body (buf, pos is
// an index into it). The first error sticks: later reads return zero
// values, so a parser can check err once after a group of reads.
type decoder struct {
	r     io.ReaderAt
	size  int64 // file size, or len(buf)
	pos   int64
	order binary.ByteOrder
	err   error

	// window caches file bytes [winOff, winOff+len(win)); for a section
	// body it is the whole body.
	win    []byte
	winOff int64

	// where names a decompressed section in errors, e.g. "EVENT_FORMATS
	// section at 0x80f"; "" for the file itself.
	where string
}

const windowSize = 64 << 10

func newFileDecoder(r io.ReaderAt, size, pos int64, order binary.ByteOrder) *decoder {
	return &decoder{r: r, size: size, pos: pos, order: order}
}

func newBodyDecoder(body []byte, order binary.ByteOrder, where string) *decoder {
	return &decoder{size: int64(len(body)), order: order, win: body, where: where}
}

// at formats a position for an error message.
func (d *decoder) at(pos int64) string {
	if d.where == "" {
		return fmt.Sprintf("offset %#x", pos)
	}
	return fmt.Sprintf("byte %#x of %s", pos, d.where)
}

// fail records an error about the bytes at pos, unless one is recorded.
func (d *decoder) fail(pos int64, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("at %s: %w", d.at(pos), err)
	}
}

// failf records a formatted error about the bytes at pos.
func (d *decoder) failf(pos int64, format string, args ...any) {
	d.fail(pos, fmt.Errorf(format, args...))
}

// left returns how many bytes remain.
func (d *decoder) left() int64 { return d.size - d.pos }

// need returns the next n bytes, which alias the window or a new buffer
// and stay valid until the next read. what names them in errors.
func (d *decoder) need(n int64, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.left() {
		d.fail(d.pos, fmt.Errorf("%s: %d bytes needed, %d left: %w", what, n, max(d.left(), 0), ErrTruncated))
		return nil
	}
	if d.r == nil {
		b := d.win[d.pos : d.pos+n]
		d.pos += n
		return b
	}
	if d.pos < d.winOff || d.pos+n > d.winOff+int64(len(d.win)) {
		if !d.fill(n, what) {
			return nil
		}
	}
	i := d.pos - d.winOff
	d.pos += n
	return d.win[i : i+n]
}

// fill loads the window from pos with at least n bytes.
func (d *decoder) fill(n int64, what string) bool {
	want := max(n, min(windowSize, d.left()))
	if int64(cap(d.win)) >= want {
		d.win = d.win[:want]
	} else {
		d.win = make([]byte, want)
	}
	d.winOff = d.pos
	got, err := d.r.ReadAt(d.win, d.pos)
	if int64(got) < n {
		d.win = d.win[:0]
		if err == nil || errors.Is(err, io.EOF) {
			err = ErrTruncated
		}
		d.fail(d.pos, fmt.Errorf("read %s: %w", what, err))
		return false
	}
	d.win = d.win[:got]
	return true
}

func (d *decoder) u16(what string) uint16 {
	if b := d.need(2, what); b != nil {
		return d.order.Uint16(b)
	}
	return 0
}

func (d *decoder) u32(what string) uint32 {
	if b := d.need(4, what); b != nil {
		return d.order.Uint32(b)
	}
	return 0
}

func (d *decoder) u64(what string) uint64 {
	if b := d.need(8, what); b != nil {
		return d.order.Uint64(b)
	}
	return 0
}

// text reads n bytes as a string.
func (d *decoder) text(n uint64, what string) string {
	if n > uint64(max(d.left(), 0)) {
		d.fail(d.pos, fmt.Errorf("%s: size %d runs past the end (%d bytes left): %w", what, n, max(d.left(), 0), ErrTruncated))
		return ""
	}
	return string(d.need(int64(n), what))
}

// cstring reads a NUL-terminated string.
func (d *decoder) cstring(what string) string {
	start := d.pos
	for n := int64(0); d.err == nil; {
		if n >= maxString {
			d.failf(start, "%s: no NUL in %d bytes", what, maxString)
			return ""
		}
		chunk := min(64, d.left())
		if chunk <= 0 {
			d.fail(start, fmt.Errorf("%s: no NUL before the end: %w", what, ErrTruncated))
			return ""
		}
		b := d.need(chunk, what)
		if b == nil {
			return ""
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			d.pos = start
			s := d.need(n+int64(i)+1, what)
			return string(s[:len(s)-1])
		}
		n += chunk
	}
	return ""
}

// label reads len(want) bytes and checks that they start with the first
// cmp bytes of want, as trace-cmd compares its labels.
func (d *decoder) label(want string, cmp int) bool {
	pos := d.pos
	b := d.need(int64(len(want)), fmt.Sprintf("label %q", want))
	if b == nil {
		return false
	}
	if string(b[:cmp]) != want[:cmp] {
		d.failf(pos, "found %q where %q belongs", b, want)
		return false
	}
	return true
}
