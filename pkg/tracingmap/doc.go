// Package tracingmap is the aggregation map of user-space hists: a
// pre-allocated, lock-free, open-addressing hash map from fixed-size byte
// keys to elements holding u64 sums, modelled on the kernel's tracing_map
// (kernel/trace/tracing_map.c), itself built on Cliff Click's lock-free
// hash table.
//
// A Map of capacity n holds at most n elements, all allocated by New, in a
// table of 2n slots probed linearly. Any number of goroutines may insert
// keys and add to sums at once. Insert claims a free slot by
// compare-and-swap of the key's hash, takes the next free element, fills
// in the key and only then publishes the element in the slot. Slots are
// never freed, so a key already present is always found before the first
// free slot of its probe sequence. When every element is in use, a new
// key is not inserted and the map counts a drop; keys already present keep
// being found and updated.
//
// An inserter that meets a slot whose hash matches but whose element is
// not yet published waits briefly for it. If the other inserter does not
// finish in time, it moves on, and two elements may then hold the same
// key, as in the kernel. Entries merges such duplicates.
//
// Unlike the kernel, which frees a slot it claimed when no element is
// left, a Map leaves such a slot claimed and marks it dead: freeing it
// could hide keys inserted further along the probe sequence meanwhile.
// Inserts check for a full map before they claim a slot, so only inserts
// racing for the last element leave dead slots.
package tracingmap
