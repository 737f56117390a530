// Package report prints the records of a trace.dat file as trace-cmd
// report does (trace-cmd 3.1.6 with libtraceevent 1.7 and its default
// plugins), byte for byte (Text), and as JSON (one document) or NDJSON
// (one object per line). A Printer prints records one at a time from
// formats, kernel symbols and task names alone, so that a live stream
// prints as a file does. ParseEventFilters binds report's -F arguments
// through package catalog.
//
// Each event's print fmt is parsed once (package parse builds the trees
// libtraceevent builds) and compiled against the event's fields; records
// are then printed with libtraceevent's evaluation rules, including its
// fallbacks: "[FAILED TO PARSE]" and raw fields for formats it cannot
// parse, ">c<" for conversions it does not know (%c, %+d and % d among
// them), its operator precedence and associativity, reads past the end of
// a record into the bytes that follow it in the page, the formats of the
// plugins trace-cmd loads (sched_switch, sched_wakeup, kmem, hrtimer,
// futex, tlb, function, kvm, and trace-cmd's own function graph), and the
// comm cache the sched_switch plugin fills as it prints. The records of a
// file's ring-buffer instances (trace-cmd record -B, extract -a) are
// merged and tagged with their instance's name as trace-cmd merges and
// tags them.
//
// What it does not reproduce: the mac80211, scsi and xen plugins (their
// events print as "[FAILED TO PARSE]" where trace-cmd calls the plugins'
// helpers); what glibc prints for a '*' width or precision taken from a
// negative value (libtraceevent then passes printf one argument too few:
// the output is the conversion's own text for "%.*s", undefined
// otherwise); paddings over 32 MiB, which are cut there; latency-format
// files; and, in Stat, the offset trace-cmd shows for a CPU without data
// in a version 6 file (package tracedat does not keep it).
package report
