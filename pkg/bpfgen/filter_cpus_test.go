package bpfgen

import "testing"

// TestEmitFilterCPUs checks & with a CPU list whose last entry is one CPU:
// that CPU alone, not every CPU up to it (common_cpu & CPUS{1} matched
// CPU 0 when it compiled to cpu <= 1).
func TestEmitFilterCPUs(t *testing.T) {
	tests := []struct{ src, want string }{{
		"common_cpu & CPUS{1}",
		`; common_cpu & CPUS{1}
0: Call FnGetSmpProcessorId
1: JNEImm dst: r0 off: -1 imm: 1 <miss>
miss:
2: MovImm dst: r0 imm: 1
3: Exit`,
	}, {
		"cpu & CPUS{0}",
		`; cpu & CPUS{0}
0: Call FnGetSmpProcessorId
1: JNEImm dst: r0 off: -1 imm: 0 <miss>
miss:
2: MovImm dst: r0 imm: 1
3: Exit`,
	}, {
		"cpu & CPUS{2-3,7}",
		`; cpu & CPUS{2-3,7}
0: Call FnGetSmpProcessorId
1: JLTImm dst: r0 off: -1 imm: 2 <filter_cpus_2>
2: JLEImm dst: r0 off: -1 imm: 3 <filter_pass_1>
filter_cpus_2:
3: JNEImm dst: r0 off: -1 imm: 7 <miss>
filter_pass_1:
4: Ja off: -1 <miss>
miss:
5: MovImm dst: r0 imm: 1
6: Exit`,
	}, {
		// A field holding a CPU, under !: the test is inverted.
		"!(fd & CPUS{5})",
		`; fd & CPUS{5}
0: LdXMemW dst: r0 src: r6 off: 24 imm: 0
1: LShImm dst: r0 imm: 32
2: ArShImm dst: r0 imm: 32
3: JEqImm dst: r0 off: -1 imm: 5 <miss>
miss:
4: MovImm dst: r0 imm: 1
5: Exit`,
	}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			if got := listing(t, tt.src, StackArea{}); got != tt.want {
				t.Errorf("EmitFilter(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
		})
	}
}
