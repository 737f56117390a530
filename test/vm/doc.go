// Package vm runs gtrace against the real kernel as its oracle: it boots
// Debian's stock kernels, which have hist triggers, in QEMU, runs each case
// of the file cases once through the kernel's tracefs and once through
// gtrace on the same controlled workload (vmload), and compares the two
// outputs.
//
// run.sh fetches the kernel (apt-get download, unpacked into a cache, never
// installed), builds an initramfs of busybox, gtrace, vmload, trace-cmd,
// init.sh and the cases, boots it and writes the serial console to a log.
// The guest prints each case between markers, its outputs base64-encoded:
//
//	=== BOOT uptime=6.02 kernel=6.1.0-56-amd64
//	=== CASE headline uptime=6.10 kind=hist
//	=== KERNEL-TIME uptime=6.90
//	=== KERNEL rc=0
//	(base64 of the kernel's hist file)
//	=== .
//	=== KERNEL-STDERR rc=0
//	...
//	=== GTRACE-TIME uptime=9.20
//	=== GTRACE rc=0
//	...
//	=== GTRACE-STDERR rc=0
//	...
//	=== END headline uptime=9.30
//	=== SKIP percent needs kernel 6.2
//	=== DONE uptime=12.00
//
// A record case (kind=record) prints trace-cmd report of trace-cmd's
// recording as KERNEL, of gtrace's as GTRACE, and gtrace report of
// trace-cmd's recording as REPORT. A plan case (kind=plan) prints only
// gtrace's --dry-run plan, as PLAN; a case named nobtf-* runs with the
// kernel's BTF hidden, as on a kernel without CONFIG_DEBUG_INFO_BTF, and
// prints its plan as PLAN before its outputs.
//
// ParseConsole reads such a log; CompareHist and CompareRecord compare the
// outputs of a case, and CheckPlan checks where the plan puts the programs. The test TestKernelOracle runs it all; it is skipped unless
// GTRACE_VM is set (see docs/testing.md).
package vm
