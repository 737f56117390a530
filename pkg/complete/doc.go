// Package complete finds the candidates of gtrace's shell completion in
// an event catalog: event names as -e and list's patterns take them,
// field names with their hist modifiers as -k, --vals and -s take them,
// and field names inside a filter. It reads only what it needs: the list
// of events, and the formats of the events a field is asked for.
package complete
