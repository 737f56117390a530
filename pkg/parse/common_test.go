package parse

import (
	"encoding/binary"
	"testing"
)

func TestCommonFields(t *testing.T) {
	le := []byte{0x3b, 0x01, 0x01, 0x02, 0xfe, 0xff, 0xff, 0xff, 9, 9}
	be := []byte{0x01, 0x3b, 0x01, 0x02, 0x00, 0x00, 0x30, 0x39}
	tests := []struct {
		name  string
		rec   []byte
		order binary.ByteOrder
		id    int
		idOK  bool
		pid   int32
		pidOK bool
	}{
		{"little endian", le, binary.LittleEndian, 315, true, -2, true},
		{"big endian", be, binary.BigEndian, 315, true, 12345, true},
		{"type only", le[:4], binary.LittleEndian, 315, true, 0, false},
		{"short", le[:1], binary.LittleEndian, 0, false, 0, false},
		{"empty", nil, binary.LittleEndian, 0, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if id, ok := CommonTypeOrder(tt.rec, tt.order); id != tt.id || ok != tt.idOK {
				t.Errorf("CommonTypeOrder(% x) = %d, %v, want %d, %v", tt.rec, id, ok, tt.id, tt.idOK)
			}
			if pid, ok := CommonPIDOrder(tt.rec, tt.order); pid != tt.pid || ok != tt.pidOK {
				t.Errorf("CommonPIDOrder(% x) = %d, %v, want %d, %v", tt.rec, pid, ok, tt.pid, tt.pidOK)
			}
		})
	}
	rec := make([]byte, CommonSize)
	binary.NativeEndian.PutUint16(rec[CommonTypeOffset:], 42)
	binary.NativeEndian.PutUint32(rec[CommonPIDOffset:], 4711)
	if id, ok := CommonType(rec); id != 42 || !ok {
		t.Errorf("CommonType(% x) = %d, %v, want 42, true", rec, id, ok)
	}
	if pid, ok := CommonPID(rec); pid != 4711 || !ok {
		t.Errorf("CommonPID(% x) = %d, %v, want 4711, true", rec, pid, ok)
	}
}
