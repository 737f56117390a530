package parse

import "encoding/binary"

// The fields every event record starts with, as every format file
// declares them: common_type (unsigned short) at 0, common_flags and
// common_preempt_count (unsigned char) at 2 and 3, common_pid (int) at 4.
const (
	CommonTypeOffset = 0
	CommonPIDOffset  = 4
	// CommonSize is the size of the common fields, the shortest record.
	CommonSize = 8
)

// CommonType returns a record's common_type, the ID of its event, in the
// byte order of the machine gtrace runs on (that of the records its BPF
// programs write). ok is false when the record is too short to hold it.
func CommonType(rec []byte) (id int, ok bool) {
	return CommonTypeOrder(rec, binary.NativeEndian)
}

// CommonPID returns a record's common_pid in the byte order of the machine
// gtrace runs on. ok is false when the record is too short to hold it.
func CommonPID(rec []byte) (pid int32, ok bool) {
	return CommonPIDOrder(rec, binary.NativeEndian)
}

// CommonTypeOrder is CommonType for a record in the given byte order, such
// as that of a trace.dat file.
func CommonTypeOrder(rec []byte, order binary.ByteOrder) (id int, ok bool) {
	if len(rec) < CommonTypeOffset+2 {
		return 0, false
	}
	return int(order.Uint16(rec[CommonTypeOffset:])), true
}

// CommonPIDOrder is CommonPID for a record in the given byte order, such
// as that of a trace.dat file.
func CommonPIDOrder(rec []byte, order binary.ByteOrder) (pid int32, ok bool) {
	if len(rec) < CommonPIDOffset+4 {
		return 0, false
	}
	return int32(order.Uint32(rec[CommonPIDOffset:])), true
}
