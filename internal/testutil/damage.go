package testutil

import (
	"bytes"
	"encoding/binary"
)

// Damage returns a copy of data changed by edits, four bytes an edit: a
// little-endian offset (modulo the size), an operation and a value. The
// operations set the byte, add to it, or write a 4- or 8-byte value there
// that sizes and offsets often trip on. Fuzz targets that damage a valid
// file this way fuzz a few bytes however large the file: go test
// minimizes every input that finds new code, in time quadratic in its
// size, and fuzzes nothing meanwhile.
func Damage(data, edits []byte) []byte {
	out := bytes.Clone(data)
	if len(out) == 0 {
		return out
	}
	interesting := []uint64{0, 1, 0x7f, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 32, 1<<63 - 1, 1 << 63, ^uint64(0)}
	for ; len(edits) >= 4; edits = edits[4:] {
		at := int(binary.LittleEndian.Uint16(edits)) % len(out)
		op, v := edits[2], edits[3]
		switch op % 4 {
		case 0:
			out[at] = v
		case 1:
			out[at] += v
		case 2, 3:
			n := 4 << (op % 4 / 3)
			var word [8]byte
			binary.LittleEndian.PutUint64(word[:], interesting[int(v)%len(interesting)])
			copy(out[at:], word[:n])
		}
	}
	return out
}
