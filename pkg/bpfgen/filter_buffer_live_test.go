package bpfgen

import (
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// testFilterBuffer is the filter's buffer of the programs that tests
// load on their own, outside a collection; it lives as long as the test
// binary.
var testFilterBuffer = sync.OnceValues(func() (*ebpf.Map, error) {
	return ebpf.NewMap(FilterBufferSpec())
})

// withFilterBuffer points the references of insns to the filter's buffer
// at testFilterBuffer.
func withFilterBuffer(insns asm.Instructions) error {
	for _, ins := range insns {
		if ins.Reference() == FilterBufferName {
			m, err := testFilterBuffer()
			if err != nil {
				return err
			}
			return insns.AssociateMap(FilterBufferName, m)
		}
	}
	return nil
}
