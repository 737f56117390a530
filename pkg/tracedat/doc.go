// Package tracedat reads trace-cmd's trace.dat files (versions 6 and 7,
// uncompressed or zstd-compressed) and decodes the kernel ring-buffer pages
// they hold.
//
// Open or Read parse the file's metadata into a *File: the initial header,
// the header_page/header_event descriptions, every stored event format
// (parsed with package parse), kallsyms, printk formats, saved cmdlines,
// the options and, per ring-buffer instance, where each CPU's pages are.
// CPU data is read lazily: (*File).Records returns an Iterator that merges
// the records of all CPUs by timestamp, decompressing one chunk of pages
// at a time and allocating nothing per record. PageReader decodes single
// pages, for example pages copied from trace_pipe_raw.
//
// Reading never panics on malformed input. Errors name what is wrong and
// the file offset where it was found; errors.Is(err, ErrTruncated)
// reports a file that ends early. A file cut short still yields every
// record of the pages it holds completely, as long as its metadata is
// whole.
//
// The byte layout is described in types.go, next to the constants a
// writer shares with the reader.
package tracedat
