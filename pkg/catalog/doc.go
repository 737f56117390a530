// Package catalog answers, for every gtrace command, which trace events
// exist and what each one's format is: those of the running kernel
// (Live, through tracefs) or those a trace.dat file stores (File). On top
// of a catalog it resolves trace-cmd style event patterns (Match, Lookup)
// and turns -e PATTERN -f FILTER selectors into events with their formats
// and bound filters (Select), the one place where event names meet
// formats and filters.
package catalog
