// Package bpfgen generates BPF programs from gtrace's parsed specifications
// (hist plans, filters) as cilium/ebpf ProgramSpecs and MapSpecs. It is pure:
// it loads nothing and needs no privileges, so everything here is testable
// as an ordinary user.
//
// Register contract for tracepoint programs generated here:
//
//	R6      the program's context: the raw trace record (kept for the whole program)
//	R7..R9  scratch that survives helper calls; each emitter documents what it uses
//	R0..R5  clobbered by helper calls
//	R10     frame pointer; stack slots are named constants of each generator
package bpfgen
