package tracedat

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdDecoder is shared by all files: DecodeAll is safe for concurrent
// use. Its output grows with the data actually decoded, up to
// maxDecompressed, so a bogus announced size costs no memory.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(maxDecompressed))
})

// maxDecompressed bounds one decompressed section or chunk (1 GiB).
const maxDecompressed = 1 << 30

// decompress decodes the zstd frame src, which must hold exactly size
// bytes, into dst's storage (reallocated if too small) and returns the
// result. On an error it returns what the blocks before the damage
// decoded, if anything.
func decompress(dst, src []byte, size int) ([]byte, error) {
	if size < 0 || size > maxDecompressed {
		return nil, fmt.Errorf("zstd: uncompressed size %d out of range", size)
	}
	dec, err := zstdDecoder()
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if cap(dst) < size {
		// A first guess, grown by the decoder if the data is bigger:
		// kallsyms and formats compress 4-10x, pages rarely beyond 32x.
		dst = make([]byte, 0, min(size, max(32*len(src), 64<<10)))
	}
	out, err := dec.DecodeAll(src, dst[:0])
	if err != nil {
		return out, fmt.Errorf("zstd: %w", err)
	}
	if len(out) != size {
		return out, fmt.Errorf("zstd: frame decodes to %d bytes, %d announced", len(out), size)
	}
	return out, nil
}
