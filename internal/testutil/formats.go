package testutil

import (
	"embed"
	"io/fs"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// formats holds real format files, copied from events/SYSTEM/EVENT/format
// of a 6.18 x86-64 kernel and named SYSTEM_EVENT.format. Event IDs differ
// between kernels: tests take them from the formats, not from constants.
//
//go:embed formats/*.format
var formats embed.FS

// FormatFiles returns the real format files, named SYSTEM_EVENT.format,
// for tests that need them as files (a fake tracefs tree, fuzz seeds).
func FormatFiles() fs.FS {
	sub, err := fs.Sub(formats, "formats")
	if err != nil {
		panic(err) // "formats" is a valid path
	}
	return sub
}

// FormatText returns the real format file of an event named "system:event".
func FormatText(tb testing.TB, name string) string {
	tb.Helper()
	sys, ev, ok := strings.Cut(name, ":")
	if !ok {
		tb.Fatalf("format %q: want system:event", name)
	}
	b, err := fs.ReadFile(FormatFiles(), sys+"_"+ev+".format")
	if err != nil {
		tb.Fatalf("format %q: no such fixture in internal/testutil/formats: %v", name, err)
	}
	return string(b)
}

// Format parses the real format of an event named "system:event". Each
// call returns a new Format, which the caller may change.
func Format(tb testing.TB, name string) *parse.Format {
	tb.Helper()
	f, err := parse.ParseFormat(name, FormatText(tb, name))
	if err != nil {
		tb.Fatalf("ParseFormat(%s): %+v", name, err)
	}
	f.System, _, _ = strings.Cut(name, ":")
	if f.FullName() != name {
		tb.Fatalf("format %q names event %q", name, f.FullName())
	}
	return f
}
