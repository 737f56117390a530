// Package report prints the records of a trace.dat file as trace-cmd
// report does (trace-cmd 3.1.6 with libtraceevent 1.7 and its default
// plugins), byte for byte, and as JSON.
//
// Each event's print fmt is parsed once (package parse builds the trees
// libtraceevent builds) and compiled against the event's fields; records
// are then printed with libtraceevent's evaluation rules, including its
// fallbacks: "[FAILED TO PARSE]" and raw fields for formats it cannot
// parse, ">c<" for conversions it does not know (%c among them), the
// plugins' own formats for sched_switch, sched_wakeup, kmem, hrtimer,
// futex, tlb and ftrace function events, and the comm cache the
// sched_switch plugin fills as it prints.
package report
