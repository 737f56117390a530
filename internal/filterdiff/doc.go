// Package filterdiff holds a differential test of gtrace's filters
// against the kernel's own: the kernel filters events in tracefs
// instances, gtrace records the same events unfiltered and its
// interpreter applies the filters, and the two must keep the same
// events. It has no code of its own.
package filterdiff
