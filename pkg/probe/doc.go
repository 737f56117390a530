// Package probe is gtrace's kernel side: it loads the programs that bpfgen
// generates, attaches them to tracepoints and reads their maps. Links are
// held by file descriptors and never pinned, so the kernel detaches
// everything when gtrace exits, even by SIGKILL.
package probe
