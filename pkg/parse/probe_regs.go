package parse

import (
	"fmt"
	"sort"
)

// probeRegs are the register names a probe's %REG takes per architecture,
// as the kernel's regs_query_register_offset knows them (its
// regoffset_table): exact, lowercase.
var probeRegs = map[string]map[string]bool{
	"amd64": regSet("r15", "r14", "r13", "r12", "r11", "r10", "r9", "r8",
		"bx", "cx", "dx", "si", "di", "bp", "ax", "orig_ax", "ip", "cs", "flags", "sp", "ss"),
	"arm64": arm64Regs(),
}

func regSet(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func arm64Regs() map[string]bool {
	m := regSet("lr", "sp", "pc", "pstate")
	for i := 0; i <= 30; i++ {
		m[fmt.Sprintf("x%d", i)] = true
	}
	return m
}

// probeArgRegs are the registers of the first arguments at a function's
// entry, by the architecture's calling convention; the next ones are on
// the stack, from the word after the return address (x86-64) or from the
// stack pointer (arm64).
var probeArgRegs = map[string][]string{
	"amd64": {"di", "si", "dx", "cx", "r8", "r9"},
	"arm64": {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"},
}

// probeStackArgBase is the $stackN of the first argument on the stack.
var probeStackArgBase = map[string]int{"amd64": 1, "arm64": 0}

// probeUserArgsMax is the most arguments $argN reads on a uprobe.
const probeUserArgsMax = 16

// probeArgReg returns what $argN is on a uprobe at a function's entry:
// a register ("%di") or a stack word ("$stack1").
func probeArgReg(arch string, n int) (string, bool) {
	regs := probeArgRegs[arch]
	switch {
	case n < 1 || n > probeUserArgsMax:
		return "", false
	case n <= len(regs):
		return "%" + regs[n-1], true
	}
	return fmt.Sprintf("$stack%d", probeStackArgBase[arch]+n-1-len(regs)), true
}

// probeArchs returns the architectures whose registers gtrace knows.
func probeArchs() []string {
	var a []string
	for k := range probeRegs {
		a = append(a, k)
	}
	sort.Strings(a)
	return a
}

// probeRegNames returns arch's register names, sorted.
func probeRegNames(arch string) []string {
	var a []string
	for k := range probeRegs[arch] {
		a = append(a, k)
	}
	sort.Strings(a)
	return a
}
