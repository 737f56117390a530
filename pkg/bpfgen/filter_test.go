package bpfgen

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/gtrace/gtrace/pkg/parse"
)

// filterFormat has a field of each kind the backend reads, some of them
// misaligned on purpose.
const filterFormat = `name: made_up
ID: 77
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:int fd;	offset:24;	size:8;	signed:0;
	field:u64 odd;	offset:36;	size:8;	signed:0;
	field:short half;	offset:44;	size:2;	signed:1;
	field:__data_loc char[] name;	offset:48;	size:4;	signed:0;
	field:__rel_loc char[] path;	offset:52;	size:4;	signed:0;
	field:const char * file;	offset:56;	size:8;	signed:0;
	field:unsigned long addr;	offset:64;	size:8;	signed:0;
	field:__data_loc cpumask_t mask;	offset:72;	size:4;	signed:0;

print fmt: "x"
`

func bindTest(t *testing.T, src string) *parse.BoundFilter {
	t.Helper()
	f := format(t, filterFormat, "test")
	e, err := parse.ParseFilter("f", src)
	if err != nil {
		t.Fatalf("ParseFilter(%q) = %+v", src, err)
	}
	bf, err := parse.BindFilter("f", src, e, f)
	if err != nil {
		t.Fatalf("BindFilter(%q) = %+v", src, err)
	}
	return bf
}

// listing emits src's filter and an exit at "miss", and returns the
// listing with blank lines and indentation removed.
func listing(t *testing.T, src string, scratch StackArea) string {
	t.Helper()
	b := &Builder{}
	if err := EmitFilter(b, bindTest(t, src), "miss", scratch); err != nil {
		t.Fatalf("EmitFilter(%q) = %+v", src, err)
	}
	b.Mark("miss")
	b.Emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
	return compact(b.Instructions())
}

// compact returns a listing with blank lines and indentation removed.
func compact(insns asm.Instructions) string {
	var lines []string
	for _, l := range strings.Split(fmt.Sprint(insns), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func TestEmitFilter(t *testing.T) {
	scratch := StackArea{Off: -64, Size: 64}
	tests := []struct {
		src  string
		want string
	}{{
		// An int argument in an 8-byte slot is read as the int it is.
		"fd == -100",
		`; fd == -100
0: LdXMemW dst: r0 src: r6 off: 24 imm: 0
1: LShImm dst: r0 imm: 32
2: ArShImm dst: r0 imm: 32
3: JNEImm dst: r0 off: -1 imm: -100 <miss>
miss:
4: MovImm dst: r0 imm: 1
5: Exit`,
	}, {
		"fd < 3 && half >= -2",
		`; fd < 3
0: LdXMemW dst: r0 src: r6 off: 24 imm: 0
1: LShImm dst: r0 imm: 32
2: ArShImm dst: r0 imm: 32
3: JSGEImm dst: r0 off: -1 imm: 3 <miss>
; half >= -2
4: LdXMemH dst: r0 src: r6 off: 44 imm: 0
5: LShImm dst: r0 imm: 48
6: ArShImm dst: r0 imm: 48
7: JSLTImm dst: r0 off: -1 imm: -2 <miss>
miss:
8: MovImm dst: r0 imm: 1
9: Exit`,
	}, {
		// A misaligned u64 is read in aligned halves; a constant beyond
		// 32 bits goes through a register.
		"odd > 0x100000000 || odd & 0x80000000",
		`; odd > 0x100000000
0: LdXMemW dst: r0 src: r6 off: 36 imm: 0
1: LdXMemW dst: r1 src: r6 off: 40 imm: 0
2: LShImm dst: r1 imm: 32
3: OrReg dst: r0 src: r1
4: LdImmDW dst: r1 imm: 4294967296
6: JGTReg dst: r0 off: -1 src: r1 <filter_pass_1>
; odd & 0x80000000
7: LdXMemW dst: r0 src: r6 off: 36 imm: 0
8: LdXMemW dst: r1 src: r6 off: 40 imm: 0
9: LShImm dst: r1 imm: 32
10: OrReg dst: r0 src: r1
11: LdImmDW dst: r1 imm: 2147483648
13: AndReg dst: r0 src: r1
14: JEqImm dst: r0 off: -1 imm: 0 <miss>
filter_pass_1:
15: Ja off: -1 <miss>
miss:
16: MovImm dst: r0 imm: 1
17: Exit`,
	}, {
		// ! swaps the targets; || jumps out on the first true operand.
		"!(common_pid == 1 || common_type != 77)",
		`; common_pid == 1
0: MovReg dst: r0 src: r9
1: LShImm dst: r0 imm: 32
2: ArShImm dst: r0 imm: 32
3: JEqImm dst: r0 off: -1 imm: 1 <miss>
; common_type != 77
4: MovImm dst: r0 imm: 77
5: JNEImm dst: r0 off: -1 imm: 77 <miss>
miss:
6: MovImm dst: r0 imm: 1
7: Exit`,
	}, {
		"cpu & CPUS{1,3-5} && cpu == CPUS{2} && cpu != CPUS{0-1}",
		`; cpu & CPUS{1,3-5}
0: Call FnGetSmpProcessorId
1: JEqImm dst: r0 off: -1 imm: 1 <filter_next_2>
2: JLTImm dst: r0 off: -1 imm: 3 <miss>
3: JGTImm dst: r0 off: -1 imm: 5 <miss>
filter_next_2:
; cpu == CPUS{2}
4: Call FnGetSmpProcessorId
5: JNEImm dst: r0 off: -1 imm: 2 <miss>
; cpu != CPUS{0-1}
6: MovImm dst: r0 imm: 0
7: JNEImm dst: r0 off: -1 imm: 0 <miss>
miss:
8: MovImm dst: r0 imm: 1
9: Exit`,
	}, {
		// A static array is compared in place, in aligned chunks, NUL
		// included.
		`comm == "kworker/0:1"`,
		`; comm == "kworker/0:1"
0: LdXMemDW dst: r0 src: r6 off: 8 imm: 0
1: LdImmDW dst: r1 imm: 3418906579283441515
3: JNEReg dst: r0 off: -1 src: r1 <miss>
4: LdXMemW dst: r0 src: r6 off: 16 imm: 0
5: JNE32Imm dst: r0 off: -1 imm: 3226160 <miss>
miss:
6: MovImm dst: r0 imm: 1
7: Exit`,
	}, {
		`comm ~ "kw*"`,
		`; comm ~ "kw*"
0: LdXMemH dst: r0 src: r6 off: 8 imm: 0
1: JNE32Imm dst: r0 off: -1 imm: 30571 <miss>
miss:
2: MovImm dst: r0 imm: 1
3: Exit`,
	}, {
		// The task's name goes to the stack first.
		`COMM != "sh"`,
		`; COMM != "sh"
0: MovReg dst: r1 src: rfp
1: AddImm dst: r1 imm: -64
2: MovImm dst: r2 imm: 16
3: Call FnGetCurrentComm
4: LdXMemH dst: r0 src: rfp off: -64 imm: 0
5: JNE32Imm dst: r0 off: -1 imm: 26739 <filter_pass_1>
6: LdXMemB dst: r0 src: rfp off: -62 imm: 0
7: JEq32Imm dst: r0 off: -1 imm: 0 <miss>
filter_pass_1:
8: Ja off: -1 <miss>
miss:
9: MovImm dst: r0 imm: 1
10: Exit`,
	}, {
		// A dynamic string is copied from ctx + its offset, at most one
		// byte more than the pattern.
		`name == "ab"`,
		`; name == "ab"
0: LdXMemW dst: r0 src: r6 off: 48 imm: 0
1: MovReg dst: r2 src: r0
2: RShImm dst: r2 imm: 16
3: JLEImm dst: r2 off: -1 imm: 3 <filter_len_2>
4: MovImm dst: r2 imm: 3
filter_len_2:
5: AddImm dst: r2 imm: 1
6: AndImm dst: r0 imm: 65535
7: MovReg dst: r3 src: r6
8: AddReg dst: r3 src: r0
9: MovReg dst: r1 src: rfp
10: AddImm dst: r1 imm: -64
11: Call FnProbeReadKernelStr
12: JNEImm dst: r0 off: -1 imm: 3 <miss>
13: LdXMemH dst: r0 src: rfp off: -64 imm: 0
14: JNE32Imm dst: r0 off: -1 imm: 25185 <miss>
miss:
15: MovImm dst: r0 imm: 1
16: Exit`,
	}, {
		// __rel_loc offsets start after the u32; suffixes are matched at
		// the end of the string as measured.
		`path ~ "*.so"`,
		`; path ~ "*.so"
0: StMemW dst: rfp src: r0 off: -64 imm: 0
1: LoadMapPtr dst: r1 fd: 0 <gtrace_filter_buf>
3: MovReg dst: r2 src: rfp
4: AddImm dst: r2 imm: -64
5: Call FnMapLookupElem
6: JEqImm dst: r0 off: -1 imm: 0 <miss>
7: MovReg dst: r7 src: r0
8: LdXMemW dst: r0 src: r6 off: 52 imm: 0
9: MovReg dst: r2 src: r0
10: RShImm dst: r2 imm: 16
11: JLEImm dst: r2 off: -1 imm: 4095 <filter_len_2>
12: MovImm dst: r2 imm: 4095
filter_len_2:
13: AddImm dst: r2 imm: 1
14: AndImm dst: r0 imm: 65535
15: AddImm dst: r0 imm: 56
16: MovReg dst: r3 src: r6
17: AddReg dst: r3 src: r0
18: MovReg dst: r1 src: r7
19: Call FnProbeReadKernelStr
20: MovReg dst: r5 src: r7
21: JSLTImm dst: r0 off: -1 imm: 1 <miss>
22: MovReg dst: r7 src: r0
23: SubImm dst: r7 imm: 1
24: JGTImm dst: r7 off: -1 imm: 4095 <miss>
25: JLTImm dst: r7 off: -1 imm: 3 <miss>
26: MovReg dst: r8 src: r5
27: AddReg dst: r8 src: r7
28: LdXMemB dst: r0 src: r8 off: -3 imm: 0
29: JNEImm dst: r0 off: -1 imm: 46 <miss>
30: LdXMemB dst: r0 src: r8 off: -2 imm: 0
31: JNEImm dst: r0 off: -1 imm: 115 <miss>
32: LdXMemB dst: r0 src: r8 off: -1 imm: 0
33: JNEImm dst: r0 off: -1 imm: 111 <miss>
miss:
34: MovImm dst: r0 imm: 1
35: Exit`,
	}, {
		// A substring is searched for in a bounded loop.
		`file.ustring ~ "*ab*" || fd == 1`,
		`; file.ustring ~ "*ab*"
0: StMemW dst: rfp src: r0 off: -64 imm: 0
1: LoadMapPtr dst: r1 fd: 0 <gtrace_filter_buf>
3: MovReg dst: r2 src: rfp
4: AddImm dst: r2 imm: -64
5: Call FnMapLookupElem
6: JEqImm dst: r0 off: -1 imm: 0 <filter_next_2>
7: MovReg dst: r7 src: r0
8: LdXMemDW dst: r0 src: r6 off: 56 imm: 0
9: MovReg dst: r3 src: r0
10: MovImm dst: r2 imm: 1024
11: MovReg dst: r1 src: r7
12: Call FnProbeReadUserStr
13: MovReg dst: r5 src: r7
14: JSLTImm dst: r0 off: -1 imm: 1 <filter_next_2>
15: MovReg dst: r7 src: r0
16: SubImm dst: r7 imm: 1
17: JGTImm dst: r7 off: -1 imm: 1023 <filter_next_2>
18: JLTImm dst: r7 off: -1 imm: 2 <filter_next_2>
19: SubImm dst: r7 imm: 2
20: MovImm dst: r8 imm: 0
filter_scan_3:
21: MovReg dst: r1 src: r5
22: AddReg dst: r1 src: r8
23: MovImm dst: r2 imm: 0
24: LdXMemB dst: r0 src: r1 off: 0 imm: 0
25: XorImm dst: r0 imm: 97
26: OrReg dst: r2 src: r0
27: LdXMemB dst: r0 src: r1 off: 1 imm: 0
28: XorImm dst: r0 imm: 98
29: OrReg dst: r2 src: r0
30: JNEImm dst: r2 off: -1 imm: 0 <filter_scan_next_4>
31: Ja off: -1 <filter_pass_1>
filter_scan_next_4:
32: AddImm dst: r8 imm: 1
33: JLEReg dst: r8 off: -1 src: r7 <filter_scan_3>
filter_next_2:
; fd == 1
34: LdXMemW dst: r0 src: r6 off: 24 imm: 0
35: LShImm dst: r0 imm: 32
36: ArShImm dst: r0 imm: 32
37: JNEImm dst: r0 off: -1 imm: 1 <miss>
filter_pass_1:
38: Ja off: -1 <miss>
miss:
39: MovImm dst: r0 imm: 1
40: Exit`,
	}, {
		// A string that cannot be read fails the predicate, != or not.
		`file != "x"`,
		`; file != "x"
0: LdXMemDW dst: r0 src: r6 off: 56 imm: 0
1: MovReg dst: r3 src: r0
2: MovImm dst: r2 imm: 3
3: MovReg dst: r1 src: rfp
4: AddImm dst: r1 imm: -64
5: Call FnProbeReadKernelStr
6: JSLTImm dst: r0 off: -1 imm: 1 <miss>
7: JNEImm dst: r0 off: -1 imm: 2 <filter_pass_1>
8: LdXMemB dst: r0 src: rfp off: -64 imm: 0
9: JEq32Imm dst: r0 off: -1 imm: 120 <miss>
filter_pass_1:
10: Ja off: -1 <miss>
miss:
11: MovImm dst: r0 imm: 1
12: Exit`,
	}, {
		// A full glob copies the array, NUL-terminated, and runs an
		// automaton over it: R7 bit k is "k tokens matched"; a * keeps
		// its state (the AndImm); each token sets its bit in R2.
		`comm ~ "k*r"`,
		`; comm ~ "k*r"
0: MovReg dst: r1 src: rfp
1: AddImm dst: r1 imm: -64
2: MovImm dst: r2 imm: 17
3: MovReg dst: r3 src: r6
4: AddImm dst: r3 imm: 8
5: Call FnProbeReadKernelStr
6: JSLTImm dst: r0 off: -1 imm: 1 <miss>
7: MovImm dst: r7 imm: 1
8: MovImm dst: r8 imm: 0
filter_glob_2:
9: MovReg dst: r1 src: rfp
10: AddReg dst: r1 src: r8
11: LdXMemB dst: r0 src: r1 off: -64 imm: 0
12: JNEImm dst: r0 off: -1 imm: 0 <filter_glob_step_4>
13: Ja off: -1 <filter_glob_end_3>
filter_glob_step_4:
14: MovReg dst: r2 src: r0
15: XorImm dst: r2 imm: 107
16: SubImm dst: r2 imm: 1
17: RShImm dst: r2 imm: 63
18: LShImm dst: r2 imm: 1
19: MovReg dst: r3 src: r0
20: XorImm dst: r3 imm: 114
21: SubImm dst: r3 imm: 1
22: RShImm dst: r3 imm: 63
23: LShImm dst: r3 imm: 2
24: OrReg dst: r2 src: r3
25: MovReg dst: r3 src: r7
26: LShImm dst: r3 imm: 1
27: AndReg dst: r3 src: r2
28: AndImm dst: r7 imm: 2
29: OrReg dst: r7 src: r3
30: JNEImm dst: r7 off: -1 imm: 0 <filter_glob_more_6>
31: Ja off: -1 <miss>
filter_glob_more_6:
32: AddImm dst: r8 imm: 1
33: JLTImm dst: r8 off: -1 imm: 16 <filter_glob_2>
filter_glob_end_3:
34: RShImm dst: r7 imm: 2
35: JEqImm dst: r7 off: -1 imm: 0 <miss>
miss:
36: MovImm dst: r0 imm: 1
37: Exit`,
	}, {
		// The task name; a trailing * stops at the first full match, a
		// class is tested by sign arithmetic, without branches.
		`COMM ~ "!?[!a-c]*"`,
		`; COMM ~ "!?[!a-c]*"
0: MovReg dst: r1 src: rfp
1: AddImm dst: r1 imm: -64
2: MovImm dst: r2 imm: 16
3: Call FnGetCurrentComm
4: MovImm dst: r7 imm: 1
5: MovImm dst: r8 imm: 0
filter_glob_2:
6: MovReg dst: r1 src: rfp
7: AddReg dst: r1 src: r8
8: LdXMemB dst: r0 src: r1 off: -64 imm: 0
9: JNEImm dst: r0 off: -1 imm: 0 <filter_glob_step_4>
10: Ja off: -1 <filter_glob_end_3>
filter_glob_step_4:
11: MovImm dst: r2 imm: 2
12: MovReg dst: r3 src: r0
13: SubImm dst: r3 imm: 97
14: AndImm dst: r3 imm: 511
15: SubImm dst: r3 imm: 3
16: RShImm dst: r3 imm: 63
17: XorImm dst: r3 imm: 1
18: LShImm dst: r3 imm: 2
19: OrReg dst: r2 src: r3
20: MovReg dst: r3 src: r7
21: LShImm dst: r3 imm: 1
22: AndReg dst: r3 src: r2
23: AndImm dst: r7 imm: 4
24: OrReg dst: r7 src: r3
25: MovReg dst: r3 src: r7
26: RShImm dst: r3 imm: 2
27: JEqImm dst: r3 off: -1 imm: 0 <filter_glob_on_5>
28: Ja off: -1 <miss>
filter_glob_on_5:
29: JNEImm dst: r7 off: -1 imm: 0 <filter_glob_more_6>
30: Ja off: -1 <filter_pass_1>
filter_glob_more_6:
31: AddImm dst: r8 imm: 1
32: JLTImm dst: r8 off: -1 imm: 15 <filter_glob_2>
filter_glob_end_3:
33: RShImm dst: r7 imm: 2
34: JNEImm dst: r7 off: -1 imm: 0 <miss>
filter_pass_1:
35: Ja off: -1 <miss>
miss:
36: MovImm dst: r0 imm: 1
37: Exit`,
	}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			if got := listing(t, tt.src, scratch); got != tt.want {
				t.Errorf("EmitFilter(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
		})
	}
}

// TestEmitFilterFunction checks .function: the field within the function's
// range, unsigned, as ResolveFunctions found it; != the other way round.
func TestEmitFilterFunction(t *testing.T) {
	tests := []struct{ src, want string }{{
		"addr.function == foo",
		`; addr.function == foo
0: LdXMemDW dst: r0 src: r6 off: 64 imm: 0
1: JLTImm dst: r0 off: -1 imm: -2130706432 <miss>
2: JGEImm dst: r0 off: -1 imm: -2130706176 <miss>
miss:
3: MovImm dst: r0 imm: 1
4: Exit`,
	}, {
		"addr.function != foo && fd == 1",
		`; addr.function != foo
0: LdXMemDW dst: r0 src: r6 off: 64 imm: 0
1: JLTImm dst: r0 off: -1 imm: -2130706432 <filter_next_2>
2: JLTImm dst: r0 off: -1 imm: -2130706176 <miss>
filter_next_2:
; fd == 1
3: LdXMemW dst: r0 src: r6 off: 24 imm: 0
4: LShImm dst: r0 imm: 32
5: ArShImm dst: r0 imm: 32
6: JNEImm dst: r0 off: -1 imm: 1 <miss>
miss:
7: MovImm dst: r0 imm: 1
8: Exit`,
	}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			bf := bindTest(t, tt.src)
			err := bf.ResolveFunctions(func(name string, addr uint64) (uint64, uint64, error) {
				if name != "foo" {
					return 0, 0, fmt.Errorf("no kernel function %q", name)
				}
				return 0xffffffff81000000, 0xffffffff81000100, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			b := &Builder{}
			if err := EmitFilter(b, bf, "miss", StackArea{}); err != nil {
				t.Fatal(err)
			}
			b.Mark("miss")
			b.Emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
			if got := compact(b.Instructions()); got != tt.want {
				t.Errorf("EmitFilter(%q) =\n%s\nwant\n%s", tt.src, got, tt.want)
			}
		})
	}
}

func TestEmitFilterErrors(t *testing.T) {
	tests := []struct {
		src     string
		scratch StackArea
		msg     string
		off     int
	}{
		{"common_flags == 1", StackArea{}, `field "common_flags" is in the first 8 bytes of the record, which BPF programs cannot read`, 0},
		{"fd == 1 || common_preempt_count > 0", StackArea{}, `field "common_preempt_count" is in the first 8 bytes of the record, which BPF programs cannot read`, 11},
		{"addr.function == foo", StackArea{}, "function foo has not been looked up in the kernel's symbols", 17},
		{"mask & CPUS{1}", StackArea{}, "cpumask fields are not supported by the BPF backend yet", 0},
		{`name ~ "*` + strings.Repeat("?", 64) + `"`, StackArea{}, `glob "*` + strings.Repeat("?", 64) + `" matches 64 characters, more than the BPF backend's 63`, 7},
		// An array read whole that the stack cannot hold goes to the
		// buffer, whose key needs 4 aligned bytes of stack.
		{`comm ~ "k*r"`, StackArea{Off: -2, Size: 2}, `comm ~ "k*r" needs 6 bytes of BPF stack for its buffer's key, the filter has 2`, 7},
		{`comm == "x" && COMM == "x"`, StackArea{Off: -8, Size: 8}, `COMM == "x" needs 16 bytes of BPF stack, the filter has 8`, 23},
		{`COMM ~ "*x"`, StackArea{Off: -15, Size: 15}, `COMM ~ "*x" needs 16 bytes of BPF stack, the filter has 15`, 7},
		{`name ~ "*x"`, StackArea{Off: -3, Size: 3}, `name ~ "*x" needs 7 bytes of BPF stack for its buffer's key, the filter has 3`, 7},
		{`name == "abc"`, StackArea{Off: -2, Size: 2}, `name == "abc" needs 6 bytes of BPF stack for its buffer's key, the filter has 2`, 8},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			b := &Builder{}
			err := EmitFilter(b, bindTest(t, tt.src), "miss", tt.scratch)
			var pe *parse.Error
			if !errors.As(err, &pe) || pe.Msg != tt.msg || pe.Off != tt.off {
				t.Fatalf("EmitFilter(%q) = %v, want %q at %d", tt.src, err, tt.msg, tt.off)
			}
			if len(b.Instructions()) != 0 {
				t.Errorf("EmitFilter(%q) emitted code with its error", tt.src)
			}
		})
	}
	for _, tt := range []struct {
		pred string
		n    int // predicates, one too many
		msg  string
	}{
		{"fd == 1", maxFilterBranches + 1, "filter needs 7501 conditional jumps, more than the verifier follows on one path (7500)"},
		// 7 instructions each: two loads, shift, or, a 64-bit constant, a jump.
		{"odd == 0x100000000", maxFilterInsns/7 + 1, "filter compiles to 30002 BPF instructions, more than a jump can cross (30000)"},
	} {
		n := tt.n
		src := strings.Repeat(tt.pred+" || ", n-1) + tt.pred
		var pe *parse.Error
		b := &Builder{}
		if err := EmitFilter(b, bindTest(t, src), "miss", StackArea{}); !errors.As(err, &pe) || pe.Msg != tt.msg || len(b.Instructions()) != 0 {
			t.Errorf("EmitFilter(%d times %q) = %v, want %q", n, tt.pred, err, tt.msg)
		}
	}
	b := &Builder{}
	if err := EmitFilter(b, bindTest(t, `name == "x"`), "miss", StackArea{Off: 8, Size: 16}); err == nil {
		t.Errorf("EmitFilter with scratch above the frame = nil, want an error")
	}
}

// TestEmitFilterGlobAlwaysFalse: a glob of more one-byte tokens than an
// array or the task name holds matches nothing and reads nothing.
func TestEmitFilterGlobAlwaysFalse(t *testing.T) {
	for _, src := range []string{`comm ~ "?` + strings.Repeat("[ab]", 16) + `"`, `COMM ~ "` + strings.Repeat("?", 16) + `*"`, `comm ~ "*` + strings.Repeat("x?", 40) + `"`} {
		want := "; " + src + `
0: MovImm dst: r0 imm: 0
1: JEqImm dst: r0 off: -1 imm: 0 <miss>
miss:
2: MovImm dst: r0 imm: 1
3: Exit`
		if got := listing(t, src, StackArea{Off: -64, Size: 64}); got != want {
			t.Errorf("EmitFilter(%q) =\n%s\nwant\n%s", src, got, want)
		}
	}
}

// TestCompileGlob checks the token sets and loops of a few patterns.
func TestCompileGlob(t *testing.T) {
	set := func(chars string) (s byteSet) {
		for i := 0; i < len(chars); i++ {
			s.add(int(chars[i]), int(chars[i]))
		}
		return s
	}
	var any, notAC byteSet
	any.add(0, 255)
	notAC.add(0, 'a'-1)
	notAC.add('d', 255)
	tests := []struct {
		pat    string
		tokens []byteSet
		loops  uint64
	}{
		{"a*?", []byteSet{set("a"), any}, 0b10},
		{"*[!a-c]*", []byteSet{notAC}, 0b11},
		{"[]a-]", []byteSet{set("]a-")}, 0},
		{`[a\*`, []byteSet{set("["), set("a"), set("*")}, 0},
		{`[a-`, []byteSet{set("["), set("a"), set("-")}, 0},
		{`x\`, []byteSet{set("x"), set(`\`)}, 0},
		{"**a", []byteSet{set("a")}, 0b1},
	}
	for _, tt := range tests {
		g := compileGlob(tt.pat)
		if fmt.Sprint(g.tokens) != fmt.Sprint(tt.tokens) || g.loops != tt.loops {
			t.Errorf("compileGlob(%q) = %v, loops %b, want %v, loops %b", tt.pat, g.tokens, g.loops, tt.tokens, tt.loops)
		}
	}
}
