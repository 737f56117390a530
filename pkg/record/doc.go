// Package record is a recording session: it plans the BPF programs that
// copy the raw records of the chosen events, in batches, into per-CPU BPF
// ring buffers (see package bpfgen), loads and attaches them, reads the
// rings through their memory without being woken, and writes the records
// as the kernel's ring-buffer pages into a trace.dat file that trace-cmd
// and gtrace report read. Each CPU has a reader goroutine, which only
// copies, and a writer goroutine, which encodes pages and waits for the
// disk; the threads run at nice -10 while recording, so that a workload
// that keeps every CPU busy does not keep the readers from their rings.
//
// The file looks like one trace-cmd records, with these differences: the
// trace clock is one that BPF can read (mono by default, or boot or tai),
// not local; common_flags and common_preempt_count are 0 in every record,
// because BPF programs cannot see them; and the names of processes
// (cmdlines) are collected from a BPF map that a program on
// sched:sched_switch fills, so that processes that exited during the
// recording still have theirs.
//
// Events that enter a Plan by a pattern (sys:*, *:*) and that BPF cannot
// attach to, like irq_vectors:irq_work_exit, are left out with a warning;
// ftrace's own events (ftrace:*) are no tracepoints and are never matched.
//
// Events the rings had no room for are counted per CPU, stored in the
// pages as the kernel stores overruns (trace-cmd report prints
// "CPU:N [N EVENTS DROPPED]" at the place they were lost), and returned in
// Stats.
package record
