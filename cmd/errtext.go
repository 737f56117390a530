package cmd

import (
	"errors"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/gtrace/gtrace/pkg/parse"
)

// maxErrorLine is the widest line of an error message gtrace prints, in
// characters: a longer one, which quotes a huge argument or a corrupt
// file's contents, is cut in the middle.
const maxErrorLine = 240

// errorText is err's message as gtrace prints it: a file name said once
// ("create X: no such file or directory", not "create X: open X: no such
// file or directory"), unprintable characters escaped, and no line longer
// than maxErrorLine.
func errorText(err error) string {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		inner := pe.Error()
		if prefix, ok := strings.CutSuffix(msg, inner); ok && strings.Contains(prefix, pe.Path) {
			msg = prefix + pe.Err.Error()
		}
	}
	return capLines(parse.Escape(msg))
}

// capLines cuts the middle out of each line of s longer than
// maxErrorLine characters.
func capLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if utf8.RuneCountInString(l) <= maxErrorLine {
			continue
		}
		r := []rune(l)
		head, tail := maxErrorLine*2/3, maxErrorLine/3-5
		lines[i] = string(r[:head]) + " ... " + string(r[len(r)-tail:])
	}
	return strings.Join(lines, "\n")
}
