package hist

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// WriteCSV writes each table as RFC 4180 CSV: a header row, then one row
// per entry in its current order (call Table.Sort first); tables are
// separated by an empty line. Columns:
//
//   - per key, its values, not the kernel's text: one column or more, as
//     keyColumns lists them (for example "common_pid" 10752 and
//     "common_pid.execname" memfd:sealed-91, "id" 202 and "id.syscall"
//     sys_futex);
//   - "hitcount", unless the spec says nohitcount;
//   - per value, under "name" or "name.modifier", its sum in decimal,
//     or for .percent its share of the column as the kernel prints it
//     ("75.00", "[ERROR]"), of the column's sum over every event, the
//     dropped ones too, as text gives it.
//
// The trigger descriptions are not written; triggerInfo only has to match
// tables in length, as for the other formats.
func WriteCSV(w io.Writer, tables []*Table, triggerInfo []string, r Resolver) error {
	if len(triggerInfo) != len(tables) {
		return fmt.Errorf("write hist csv: %d tables but %d trigger descriptions", len(tables), len(triggerInfo))
	}
	cw := csv.NewWriter(w)
	for i, t := range tables {
		if i > 0 {
			cw.Flush()
			if _, err := io.WriteString(w, "\n"); err != nil {
				return fmt.Errorf("write hist csv: %w", err)
			}
		}
		writeCSVTable(cw, t, r)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write hist csv: %w", err)
	}
	return nil
}

// writeCSVTable writes one table; errors surface in cw.Error.
func writeCSVTable(cw *csv.Writer, t *Table, r Resolver) {
	p := t.Plan
	cols := valueColumns(p)
	stats := columnStats(t, cols)
	noHitcount := p.Spec != nil && p.Spec.NoHitcount
	var row []string
	for i := range p.Keys {
		row = append(row, keyColumns(&p.Keys[i])...)
	}
	if !noHitcount {
		row = append(row, "hitcount")
	}
	for _, c := range cols {
		row = append(row, fieldLabel(c.spec))
	}
	_ = cw.Write(row)
	var cells []any
	for i := range t.Entries {
		e := &t.Entries[i]
		row = row[:0]
		cells = cells[:0]
		for j := range p.Keys {
			cells = keyCells(cells, &p.Keys[j], &e.Keys[j], e.Comm, r)
		}
		for _, c := range cells {
			row = append(row, cellText(c))
		}
		if !noHitcount {
			row = append(row, strconv.FormatUint(e.Hitcount, 10))
		}
		for j := range cols {
			v := cols[j].value(e)
			if cols[j].spec.Mod == parse.ModPercent {
				row = append(row, percentText(v, stats[j].total))
			} else {
				row = append(row, cellText(cols[j].cell(e)))
			}
		}
		_ = cw.Write(row)
	}
}

// fieldLabel is a field as written in a trigger: "name" or
// "name.modifier".
func fieldLabel(f parse.HistField) string {
	if f.Mod == parse.ModNone {
		return f.Name
	}
	return f.Name + "." + modifierText(f)
}

// percentText is v's share of total as the kernel prints it, without the
// padding: "75.00", or "[ERROR]" when total is 0 and v is not.
func percentText(v, total uint64) string {
	pc := percentage(v, total)
	if pc == math.MaxUint32 {
		return "[ERROR]"
	}
	var b [16]byte
	return strings.TrimLeft(string(appendPercent(b[:0], pc)), " ")
}
