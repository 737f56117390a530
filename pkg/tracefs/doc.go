// Package tracefs finds or mounts the kernel's tracing file system and reads
// what gtrace needs from it: the list of events and their format files,
// and the kernel's symbols (/proc/kallsyms). It is one of the two packages
// of gtrace that touch the kernel.
package tracefs
