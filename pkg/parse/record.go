package parse

import (
	"bytes"
	"encoding/binary"
)

// Uint reads a numeric field from a raw record (little endian), zero
// extended to 64 bits. A record too short for the field reads as 0.
func (fld *Field) Uint(rec []byte) uint64 {
	end := fld.Offset + fld.Size
	if fld.Offset < 0 || end > len(rec) {
		return 0
	}
	b := rec[fld.Offset:end]
	switch fld.Size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Value reads a numeric field as the kernel widens it to u64: signed
// fields are sign extended, unsigned ones zero extended.
func (fld *Field) Value(rec []byte) uint64 {
	v := fld.Uint(rec)
	if !fld.Signed {
		return v
	}
	switch fld.Size {
	case 1:
		return uint64(int64(int8(v)))
	case 2:
		return uint64(int64(int16(v)))
	case 4:
		return uint64(int64(int32(v)))
	}
	return v
}

// Bytes returns a string field's bytes up to (not including) the first
// NUL: the static array, or the payload a __data_loc/__rel_loc points at.
// Other classes, and out-of-range locations, give nil.
func (fld *Field) Bytes(rec []byte) []byte {
	var b []byte
	switch fld.Class {
	case ClassString:
		end := fld.Offset + fld.Size
		if fld.Size == 0 && fld.ArrayLen < 0 {
			end = len(rec) // char buf[] of size 0 runs to the end of the record
		}
		if fld.Offset > end || end > len(rec) {
			return nil
		}
		b = rec[fld.Offset:end]
	case ClassDataLoc, ClassRelLoc:
		if fld.Offset+4 > len(rec) {
			return nil
		}
		loc := binary.LittleEndian.Uint32(rec[fld.Offset:])
		off, n := int(loc&0xffff), int(loc>>16)
		if fld.Class == ClassRelLoc {
			off += fld.Offset + 4
		}
		if off+n > len(rec) {
			return nil
		}
		b = rec[off : off+n]
	default:
		return nil
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return b
}
