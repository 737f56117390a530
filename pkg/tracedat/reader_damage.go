package tracedat

import (
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxWarnings bounds the warnings a File keeps; later ones are counted.
const maxWarnings = 20

// damageLog collects what the reader skipped in a damaged file: event
// formats it could not parse and pages it could not decode. Iterators of
// one File share it, from several goroutines.
type damageLog struct {
	mu    sync.Mutex
	seen  map[string]bool // keys of the damage reported, so that a page read twice warns once
	msgs  []string
	more  int // warnings past maxWarnings
	pages int // pages whose records were skipped, in whole or from a bad record on
}

// add records one warning under key about damage that cost the records
// of pages pages; a key already seen is ignored.
func (l *damageLog) add(key, msg string, pages int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[key] {
		return
	}
	l.seen[key] = true
	l.pages += pages
	if len(l.msgs) < maxWarnings {
		l.msgs = append(l.msgs, printable(msg))
		return
	}
	l.more++
}

// Warnings returns what the reader skipped so far to read a damaged file
// as far as it can: event formats it could not parse (their records
// print as unknown events) and damaged pages (their records are lost,
// the next page is read), each once, at most 20, then a count of the
// rest. Iterators add to it as they meet damaged pages, so call it after
// reading the records. The texts are printable: bytes of the file that
// are not are escaped.
func (f *File) Warnings() []string {
	if f.damage == nil {
		return nil
	}
	l := f.damage
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.msgs...)
	if l.more > 0 {
		out = append(out, "and "+strconv.Itoa(l.more)+" more damaged parts skipped")
	}
	return out
}

// SkippedPages returns how many pages read so far were damaged: pages
// whose records from the first bad one on were skipped, and the pages
// of compressed chunks that did not decompress. Like Warnings, it grows
// as iterators read, and counts each page once however often it is read.
func (f *File) SkippedPages() int {
	if f.damage == nil {
		return 0
	}
	f.damage.mu.Lock()
	defer f.damage.mu.Unlock()
	return f.damage.pages
}

// printable escapes what a terminal should not see: control characters,
// invalid UTF-8 and other non-printing runes, as \xNN or \u{NNNN}.
func printable(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&15, 16))
		case !unicode.IsPrint(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}
