package tracedat

import (
	"strconv"
	"sync"

	"github.com/gtrace/gtrace/pkg/parse"
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
		l.msgs = append(l.msgs, parse.Escape(msg))
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
