// Package eval runs bound event filters (parse.BoundFilter) on raw trace
// records in Go: the interpreter for trace.dat files, and the oracle that
// tests compare the BPF backend with. Match allocates nothing.
//
// Predicates that a record alone cannot decide are false, whatever their
// operator (so "!(...)" around one is true): those on char * fields, with
// or without .ustring (the memory they point to is gone), and .function
// (it needs the kernel's symbol table).
package eval
