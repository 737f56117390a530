package hist

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Resolver gives names to the numbers behind .syscall, .sym and .sym-offset
// keys. A nil func prints what the kernel prints for an unknown number.
type Resolver struct {
	// Syscall names syscall nr, with or without the kernel's "sys_"
	// prefix (it is added when missing); false prints "unknown_syscall".
	Syscall func(nr uint64) (string, bool)
	// Sym is the kernel's %ps: "name", "name [module]", or "0x<addr>"
	// when unknown.
	Sym func(addr uint64) string
	// SymOffset is the kernel's %pS: "name+0xoff/0xsize [module]", or
	// "0x<addr>" when unknown.
	SymOffset func(addr uint64) string
	// User names address addr of process pid in user space, for
	// ustacktrace keys: "name+0xoff/0xsize [file]", "file+0xoff" in a
	// file without symbols, or "0x<addr>".
	User func(pid uint32, addr uint64) string
}

func (r Resolver) syscall(nr uint64) string {
	if r.Syscall != nil {
		if name, ok := r.Syscall(nr); ok {
			if strings.HasPrefix(name, "sys_") {
				return name
			}
			return "sys_" + name
		}
	}
	return "unknown_syscall"
}

func (r Resolver) sym(addr uint64, offset bool) string {
	switch {
	case offset && r.SymOffset != nil:
		return r.SymOffset(addr)
	case !offset && r.Sym != nil:
		return r.Sym(addr)
	}
	return "0x" + strconv.FormatUint(addr, 16)
}

// WriteText writes tables as the kernel's hist file does, byte for byte:
// for each table a header with its trigger description (triggerInfo[i], the
// text after "# trigger info: ", including " [active]" or " [paused]"), the
// entries in their current order (call Table.Sort first) and the totals.
func WriteText(w io.Writer, tables []*Table, triggerInfo []string, r Resolver) error {
	if len(triggerInfo) != len(tables) {
		return fmt.Errorf("write hist text: %d tables but %d trigger descriptions", len(tables), len(triggerInfo))
	}
	bw := bufio.NewWriter(w)
	var line []byte
	for i, t := range tables {
		if i > 0 {
			bw.WriteString("\n\n")
		}
		bw.WriteString("# event histogram\n#\n# trigger info: ")
		bw.WriteString(triggerInfo[i])
		bw.WriteString("\n#\n\n")
		cols := valueColumns(t.Plan)
		stats := columnStats(t, cols)
		noHitcount := t.Plan.Spec != nil && t.Plan.Spec.NoHitcount
		for j := range t.Entries {
			line = appendEntryText(line[:0], t.Plan, &t.Entries[j], cols, stats, noHitcount, r)
			if _, err := bw.Write(line); err != nil {
				return fmt.Errorf("write hist text: %w", err)
			}
		}
		if t.Snapshot != nil {
			line = appendSnapshotText(line[:0], t.Plan, t.Snapshot, r)
			if _, err := bw.Write(line); err != nil {
				return fmt.Errorf("write hist text: %w", err)
			}
		}
		fmt.Fprintf(bw, "\nTotals:\n    Hits: %d\n    Entries: %d\n    Dropped: %d\n", t.Hits(), len(t.Entries), t.Dropped)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write hist text: %w", err)
	}
	return nil
}

// appendEntryText appends one entry line, newline included, as the
// kernel's hist_trigger_entry_print does.
func appendEntryText(b []byte, p *Plan, e *Entry, cols []column, stats []colStat, noHitcount bool, r Resolver) []byte {
	b = appendKeysText(b, p, e.Keys, e.Comm, r)
	if !noHitcount {
		b = append(b, " hitcount: "...)
		b = appendNum(b, e.Hitcount, 10, 10)
	}
	for i := range cols {
		c := &cols[i]
		b = append(b, "  "...)
		b = append(b, c.spec.Name...)
		v := c.value(e)
		switch c.spec.Mod {
		case parse.ModPercent:
			pc := percentage(v, stats[i].total)
			if pc == math.MaxUint32 {
				b = append(b, " (%):[ERROR]"...)
				break
			}
			b = append(b, " (%): "...)
			b = appendPercent(b, pc)
		case parse.ModGraph:
			b = append(b, ": "...)
			b = appendBar(b, v, stats[i].max)
		case parse.ModHex:
			b = append(b, ": "...)
			b = appendNum(b, v, 16, 10)
		case parse.ModNone, parse.ModUsecs:
			b = append(b, ": "...)
			if c.signed {
				b = appendInt(b, int64(v), 10)
			} else {
				b = appendNum(b, v, 10, 10)
			}
		}
	}
	for _, a := range e.Actions {
		b = appendActionText(b, &a)
	}
	return append(b, '\n')
}

// appendKeysText appends the braced keys of an entry (the kernel's
// hist_trigger_print_key): "{ NAME: VALUE, ... }", the '}' on a line of
// its own after a stack.
func appendKeysText(b []byte, p *Plan, keys []KeyValue, comm string, r Resolver) []byte {
	b = append(b, "{ "...)
	multiline := false
	for i := range p.Keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		k := &p.Keys[i]
		b = append(b, k.Spec.Name...)
		if k.Kind == KeyStack {
			if k.Spec.Mod == parse.ModStacktrace {
				// Not the kernel's, which glues the first frame onto
				// "NAME.stacktrace" (grammar §12.12): as common_stacktrace.
				b = append(b, ".stacktrace"...)
			}
			b = appendStackText(b, keys[i].Stack, r)
			multiline = true
			continue
		}
		b = append(b, ": "...)
		b = appendKeyText(b, k, &keys[i], comm, r)
	}
	if !multiline {
		b = append(b, ' ')
	}
	return append(b, '}')
}

// appendActionText appends what an onmax or onchange action adds to the
// entry line (grammar §6.4): the tracked value on a line of its own
// after a tab, then the saved fields; a string the save action has not
// set prints as the kernel prints its NULL, "(null)".
func appendActionText(b []byte, a *EntryAction) []byte {
	if a.Handler == parse.OnMax {
		b = append(b, "\n\tmax: "...)
	} else {
		b = append(b, "\n\tchanged: "...)
	}
	b = appendNum(b, a.Value, 10, 10)
	for _, f := range a.Saved {
		b = append(b, "  "+f.Name+": "...)
		switch {
		case f.Str && f.Set:
			b = appendPadRight(b, f.Text, 32)
		case f.Str:
			b = appendPadRight(b, "(null)", 32)
		default:
			b = appendNum(b, f.Num, 10, 10)
		}
	}
	return b
}

// appendSnapshotText appends the block of a hist whose snapshot() action
// has fired (grammar §6.6), with the newline the kernel leaves out
// between the value and "triggered by" (§12.13).
func appendSnapshotText(b []byte, p *Plan, s *Snapshot, r Resolver) []byte {
	b = append(b, "\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value { "...)
	b = append(b, s.Handler...)
	b = append(b, " }: "...)
	b = appendNum(b, s.Value, 10, 10)
	b = append(b, "\n\ttriggered by event with key: "...)
	b = appendKeysText(b, p, s.Keys, s.Comm, r)
	return append(b, '\n')
}

// appendKeyText appends the kernel's text for one key value, the part after
// "NAME: " (hist_trigger_print_key).
func appendKeyText(b []byte, k *Key, v *KeyValue, comm string, r Resolver) []byte {
	if k.Kind == KeyString {
		return appendPadRight(b, untilNUL(v.Str), 50) // %-50s
	}
	switch k.Spec.Mod {
	case parse.ModHex:
		return appendNum(b, v.Num, 16, 0) // %llx
	case parse.ModSym, parse.ModSymOffset:
		b = append(b, '[')
		b = appendNum(b, v.Num, 16, 0)
		b = append(b, "] "...)
		if k.Spec.Mod == parse.ModSym {
			return appendPadRight(b, r.sym(v.Num, false), 45) // [%llx] %-45ps
		}
		return appendPadRight(b, r.sym(v.Num, true), 55) // [%llx] %-55pS
	case parse.ModExecname:
		b = appendPadRight(b, untilNUL(comm), 16) // %-16s[%10llu]
		b = append(b, '[')
		b = appendNum(b, v.Num, 10, 10)
		return append(b, ']')
	case parse.ModSyscall:
		b = appendPadRight(b, r.syscall(v.Num), 30) // %-30s[%3llu]
		b = append(b, '[')
		b = appendNum(b, v.Num, 10, 3)
		return append(b, ']')
	case parse.ModLog2:
		b = append(b, "~ 2^"...) // ~ 2^%-2llu
		if v.Num < 10 {
			return append(strconv.AppendUint(b, v.Num, 10), ' ')
		}
		return strconv.AppendUint(b, v.Num, 10)
	case parse.ModBuckets:
		b = append(b, "~ "...)
		b = appendNum(b, v.Num, 10, 0)
		b = append(b, '-')
		return appendNum(b, v.Num+k.Spec.Buckets-1, 10, 0) // ~ %llu-%llu
	}
	if signedKey(k) {
		return appendInt(b, int64(v.Num), 10) // %10lld, where the kernel prints %10llu
	}
	return appendNum(b, v.Num, 10, 10) // %10llu
}

// appendInt appends v in decimal, right-aligned in width bytes (%<width>lld).
func appendInt(b []byte, v int64, width int) []byte {
	var d [20]byte
	s := strconv.AppendInt(d[:0], v, 10)
	for n := len(s); n < width; n++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// appendNum appends v in base 10 or 16, right-aligned in width bytes
// (printf's %<width>llu and %<width>llx).
func appendNum(b []byte, v uint64, base, width int) []byte {
	var d [20]byte
	s := strconv.AppendUint(d[:0], v, base)
	for n := len(s); n < width; n++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// appendPadRight appends s left-aligned in width bytes (printf's %-<width>s,
// which counts bytes, not runes).
func appendPadRight(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for n := len(s); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}

// untilNUL is s up to its first NUL, as the kernel's %s prints it.
func untilNUL(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// percentage is the kernel's __get_percentage: v as hundredths of a percent
// of total, or MaxUint32 when total is 0 and v is not.
func percentage(v, total uint64) uint32 {
	if total == 0 {
		if v != 0 {
			return math.MaxUint32
		}
		return 0
	}
	if v < math.MaxUint64/10000 {
		return uint32(v * 10000 / total)
	}
	total /= 10000
	if total == 0 {
		return math.MaxUint32
	}
	return uint32(v / total)
}

// appendPercent appends pc hundredths of a percent as %3u.%02u.
func appendPercent(b []byte, pc uint32) []byte {
	b = appendNum(b, uint64(pc/100), 10, 3)
	return append(b, '.', byte('0'+pc%100/10), byte('0'+pc%10))
}

// appendBar appends the kernel's 20-column graph bar for v against max
// (__fill_bar_str printed with %20s).
func appendBar(b []byte, v, max uint64) []byte {
	const size = 20
	n := percentage(v, max)
	if n == math.MaxUint32 {
		return append(b, "             [ERROR]"...)
	}
	n = n * size / 10000
	for i := uint32(0); i < size; i++ {
		if i < n {
			b = append(b, '#')
		} else {
			b = append(b, ' ')
		}
	}
	return b
}

// column is one value printed after the raw hitcount.
type column struct {
	spec   parse.HistField
	val    int  // index in Entry.Vals, or -1 for the hitcount
	signed bool // the sums are of a signed field or expression
}

func (c *column) value(e *Entry) uint64 {
	if c.val < 0 {
		return e.Hitcount
	}
	return e.Vals[c.val]
}

// dropped is the column's sum over the events t dropped: Dropped for
// the hitcount, the value's dropped sum when t keeps it, else 0.
func (c *column) dropped(t *Table) uint64 {
	switch {
	case c.val < 0:
		return t.Dropped
	case t.DroppedVals != nil:
		return t.DroppedVals[c.val]
	}
	return 0
}

// cell is the column's value as data: int64 when signed, else uint64.
func (c *column) cell(e *Entry) any {
	if c.signed {
		return int64(c.value(e))
	}
	return c.value(e)
}

// valueColumns lists the values printed after the raw hitcount, in the
// order of vals=: Plan.Vals, with hitcount.percent or hitcount.graph where
// the spec lists it.
func valueColumns(p *Plan) []column {
	var cols []column
	next := 0
	hitcount := false
	if p.Spec != nil {
		for _, f := range p.Spec.Vals {
			switch {
			case f.Name == "hitcount":
				if f.Mod != parse.ModNone {
					cols = append(cols, column{spec: f, val: -1})
					hitcount = true
				}
			case next < len(p.Vals):
				cols = append(cols, valColumn(p, next))
				next++
			}
		}
	}
	for ; next < len(p.Vals); next++ {
		cols = append(cols, valColumn(p, next))
	}
	if !hitcount && p.HitcountMod != parse.ModNone {
		f := parse.HistField{Name: "hitcount", Mod: p.HitcountMod}
		cols = append(cols, column{spec: f, val: -1})
	}
	return cols
}

func valColumn(p *Plan, i int) column {
	return column{spec: p.Vals[i].Spec, val: i, signed: p.Vals[i].Signed}
}

// colStat is the total and maximum of a column, for .percent and .graph.
// The total of a .percent column is over every event, the dropped ones
// too (grammar §12.20, where the kernel's is over the printed entries
// only); that of any other column, and the maximum, are over the printed
// entries.
type colStat struct {
	total, max uint64
}

func columnStats(t *Table, cols []column) []colStat {
	stats := make([]colStat, len(cols))
	for i := range cols {
		for j := range t.Entries {
			v := cols[i].value(&t.Entries[j])
			stats[i].total += v
			stats[i].max = max(stats[i].max, v)
		}
		if cols[i].spec.Mod == parse.ModPercent {
			stats[i].total += cols[i].dropped(t)
		}
	}
	return stats
}
