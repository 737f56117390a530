// Package hist runs the kernel's hist triggers on gtrace's engines: it turns
// a parsed hist spec and an event format into a plan (what each key and
// value is and how it is laid out), aggregates live in BPF maps or offline
// in user space, sorts the entries and prints them byte for byte as the
// kernel's hist file does, or as JSON, CSV or a table.
package hist
