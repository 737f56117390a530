// Package stream prints the events of a live recording as they happen:
// it is a record.Output whose per-CPU sinks hand the records they get to
// one printer goroutine, which merges the CPUs in timestamp order and
// prints each record through report's Printer, as trace-cmd report's
// line or as an NDJSON object.
//
// Ordering: each CPU's records come in time order, but the CPUs' readers
// deliver them independently. The printer holds a record back until
// every CPU has delivered a record at least as new, or until it is
// Options.Delay (DefaultDelay, 100 ms) older than the recording's clock
// (mono, boot or tai, which user space reads too): a record the BPF
// programs hand to their rings at once (record.Options.Stream) reaches
// the printer within a few milliseconds, so a later one with an earlier
// timestamp does not come after the delay. Output is flushed each time
// the printer has printed what it could.
//
// Task names come from the recording's comm map or /proc when a pid first
// appears (record.Comms), and from the names the recording collected when
// it ends, for the records printed then.
package stream
