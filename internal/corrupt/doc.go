// Package corrupt holds the corruption sweep: a test that damages a
// gtrace recording and a trace-cmd recording at many offsets (truncations
// and byte flips) and runs the gtrace binary on each damaged file,
// requiring no panic, no hang, bounded memory, and as much output as the
// damage leaves (for truncations, what the whole file prints, minus the
// records past the cut; for flips, at least as many lines as trace-cmd
// report prints).
//
// The test makes 200 mutations by default; bench/corruption-sweep.sh runs
// it with more. GTRACE_SWEEP_MUTATIONS and GTRACE_SWEEP_SEED set the count
// and the seed; GTRACE_SWEEP_KEEP names a directory where the mutations
// that fail the comparison with trace-cmd are kept.
package corrupt
