// Package attach names the places in the kernel where gtrace's BPF
// programs run: classic and raw tracepoints, BTF-enabled raw tracepoints,
// uprobes, kprobes and fentry/fexit, each with the BPF cookie that tells
// the events of one shared program apart. It is pure: bpfgen generates
// programs for a Point and probe attaches them there.
package attach
