package parse

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestErrorCaret(t *testing.T) {
	long := strings.Repeat("a", 200) + " bad " + strings.Repeat("b", 200)
	huge := strings.Repeat("x", 128<<10)
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"short", Errorf("-f", "pid == x", 7, 8, "bad value"),
			"-f:1:8: bad value\n  pid == x\n         ^"},
		{"tabs", Errorf("-f", "\tpid ==\tx", 8, 9, "bad value"),
			"-f:1:17: bad value\n          pid ==  x\n                  ^"},
		{"control bytes are escaped and the caret still points at the token", Errorf("-f", "a\x1b[31m == x", 10, 11, "bad value"),
			"-f:1:11: bad value\n  a\\x1b[31m == x\n  " + strings.Repeat(" ", 13) + "^"},
		{"invalid UTF-8 and a message from a file", Errorf("file", "\xff\xfe ok", 3, 5, "event \x1b]0;pwned\x07 unknown\nforged line").WithHint("\x9b"),
			"file:1:4: event \\x1b]0;pwned\\x07 unknown\\nforged line\n  \\xff\\xfe ok\n           ^~\n  hint: \\x9b"},
		{"a long line is cut around the token", Errorf("hist", long, 201, 204, "unknown"),
			"hist:1:202: unknown\n  ..." + strings.Repeat("a", 29) + " bad " + strings.Repeat("b", 66) + "...\n     " + strings.Repeat(" ", 30) + "^~~"},
		{"a token at the end of a long line", Errorf("-e", long, len(long), len(long), "missing"),
			"-e:1:406: missing\n  ..." + strings.Repeat("b", 100) + "\n  " + strings.Repeat(" ", 103) + "^"},
		{"a huge token is marked up to the window's end", Errorf("--cpu", huge, 0, len(huge), "invalid CPU list item"),
			"--cpu:1:1: invalid CPU list item\n  " + strings.Repeat("x", 100) + "...\n  ^" + strings.Repeat("~", 99)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Caret(); got != tt.want {
				t.Errorf("Caret() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, tab\tkept", "plain text, tab\tkept"},
		{"héllo ✓", "héllo ✓"},
		{"\x1b[2J\r\n\x00\x7f", `\x1b[2J\r\n\x00\x7f`},
		{"\xc3\x28 \xff", `\xc3( \xff`},
		{"bidi \u202e override, C1 \u0085", `bidi \u202e override, C1 \u0085`},
	}
	for _, tt := range tests {
		got := Escape(tt.in)
		if got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Escape(%q) = %q: not UTF-8", tt.in, got)
		}
	}
}
