package report

import (
	"slices"
	"strconv"
	"strings"
)

// funcEntry is one kallsyms symbol, as libtraceevent keeps it.
type funcEntry struct {
	addr uint64
	name string
}

// funcMap resolves kernel addresses the way libtraceevent does: every
// symbol but absolute ones (types A and a) and ARM's "$" mapping symbols,
// sorted by address; an address belongs to the closest symbol at or below
// it, however far; the last symbol holds only its own address. Symbol
// sizes and modules play no part.
type funcMap struct {
	syms []funcEntry
}

// newFuncMap parses kallsyms text. Like libtraceevent it stops at the
// first line it cannot read, keeping the symbols before it.
func newFuncMap(kallsyms string) *funcMap {
	var syms []funcEntry
	for line := range strings.SplitSeq(kallsyms, "\n") {
		if line == "" {
			continue
		}
		addr, typ, name, ok := kallsymsLine(line)
		if !ok {
			break
		}
		if name[0] == '$' || typ == 'A' || typ == 'a' {
			continue
		}
		syms = append(syms, funcEntry{addr, name})
	}
	// libtraceevent adds symbols to the front of a list, then sorts it
	// with glibc's stable merge sort: equal addresses end up in reverse
	// file order.
	slices.Reverse(syms)
	slices.SortStableFunc(syms, func(a, b funcEntry) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
	return &funcMap{syms: syms}
}

// kallsymsLine reads "addr type name" as libtraceevent's sscanf does: up
// to 16 hex digits, one type character, a name.
func kallsymsLine(line string) (addr uint64, typ byte, name string, ok bool) {
	i := skipSpace(line, 0)
	start := i
	for i < len(line) && i-start < 16 && isHex(line[i]) {
		i++
	}
	if i == start {
		return 0, 0, "", false
	}
	addr, _ = strconv.ParseUint(line[start:i], 16, 64)
	i = skipSpace(line, i)
	if i >= len(line) {
		return 0, 0, "", false
	}
	typ = line[i]
	i = skipSpace(line, i+1)
	start = i
	for i < len(line) && !isSpace(line[i]) {
		i++
	}
	if i == start {
		return 0, 0, "", false
	}
	return addr, typ, line[start:i], true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// find returns the symbol that holds addr, searching as glibc's bsearch
// does with libtraceevent's comparison (which decides which of several
// symbols at one address is found).
func (m *funcMap) find(addr uint64) (funcEntry, bool) {
	s := m.syms
	lo, hi := 0, len(s)
	for lo < hi {
		i := (lo + hi) / 2
		e := s[i]
		var next uint64 // the entry after the last is a zero address
		if i+1 < len(s) {
			next = s[i+1].addr
		}
		switch {
		case addr == e.addr || (addr > e.addr && addr < next):
			return e, true
		case addr < e.addr:
			hi = i
		default:
			lo = i + 1
		}
	}
	return funcEntry{}, false
}

// lookupName returns the address of the first symbol named name in
// address order, or 0 (libtraceevent's test_for_symbol).
func (m *funcMap) lookupName(name string) uint64 {
	for _, e := range m.syms {
		if e.name == name {
			return e.addr
		}
	}
	return 0
}

// printkMap maps the addresses of constant kernel strings to their text
// (the printk_formats file), as libtraceevent stores them: without the
// surrounding quotes and without a trailing "\n".
type printkMap map[uint64]string

func newPrintkMap(text string) printkMap {
	m := printkMap{}
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" {
			continue
		}
		addrText, rest, _ := strings.Cut(line, ":")
		addr := strtoull16(addrText)
		if len(rest) > 0 {
			rest = rest[1:]
		}
		rest = strings.TrimPrefix(rest, `"`)
		if r, ok := strings.CutSuffix(rest, `"`); ok {
			rest = strings.TrimSuffix(r, `\n`)
		}
		m[addr] = rest
	}
	return m
}

// strtoull16 is strtoull(s, NULL, 16): leading space, optional 0x, hex
// digits up to the first other byte.
func strtoull16(s string) uint64 {
	i := skipSpace(s, 0)
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		i += 2
	}
	var v uint64
	for ; i < len(s) && isHex(s[i]); i++ {
		c := s[i]
		switch {
		case c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a':
			v = v<<4 | uint64(c-'a'+10)
		default:
			v = v<<4 | uint64(c-'A'+10)
		}
	}
	return v
}

// comms maps pids to command names: the saved cmdlines of the file, then
// the names trace-cmd's sched plugin learns from the records, which never
// replace a known pid's name.
type comms struct {
	m map[int32]string
}

func newComms(saved map[int]string) *comms {
	c := &comms{m: make(map[int32]string, len(saved))}
	for pid, comm := range saved {
		c.m[int32(pid)] = comm
	}
	return c
}

// find is libtraceevent's find_cmdline.
func (c *comms) find(pid int32) string {
	if pid == 0 {
		return "<idle>"
	}
	if s, ok := c.m[pid]; ok {
		return s
	}
	return "<...>"
}

// register is tep_register_comm: it adds a name for a pid that has none.
func (c *comms) register(pid int32, comm []byte) {
	if pid == 0 {
		return
	}
	if _, ok := c.m[pid]; !ok {
		c.m[pid] = string(comm)
	}
}
