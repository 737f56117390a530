package hist

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/gtrace/gtrace/pkg/parse"
)

// WriteTable writes each table as a box-drawn table (--format table): a
// title line "<event>: <trigger info>", a header row of the keys, the
// hitcount (unless nohitcount) and the values, one row per entry in its
// current order (call Table.Sort first), a footer with the column totals,
// and a line with the hits, entries, dropped and lost counts. Keys are
// the columns of values that CSV gives them (keyColumns), names aligned
// left and numbers right; values are as the kernel prints them, without
// the padding. Tables are separated by an empty line.
func WriteTable(w io.Writer, tables []*Table, triggerInfo []string, r Resolver) error {
	if len(triggerInfo) != len(tables) {
		return fmt.Errorf("write hist table: %d tables but %d trigger descriptions", len(tables), len(triggerInfo))
	}
	for i, t := range tables {
		sep := ""
		if i > 0 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(w, "%s%s: %s\n", sep, t.Plan.Event, triggerInfo[i]); err != nil {
			return fmt.Errorf("write hist table: %w", err)
		}
		if err := writeBoxTable(w, t, r); err != nil {
			return fmt.Errorf("write hist table: %w", err)
		}
		if _, err := fmt.Fprintf(w, "Hits: %d  Entries: %d  Dropped: %d  Lost: %d\n", t.Hits(), len(t.Entries), t.Dropped, t.Lost); err != nil {
			return fmt.Errorf("write hist table: %w", err)
		}
	}
	return nil
}

func writeBoxTable(w io.Writer, t *Table, r Resolver) error {
	p := t.Plan
	cols := valueColumns(p)
	stats := columnStats(t, cols)
	noHitcount := p.Spec != nil && p.Spec.NoHitcount

	var header, footer []string
	var align []tw.Align
	for i := range p.Keys {
		k := &p.Keys[i]
		for j, name := range keyColumns(k) {
			header = append(header, name)
			if len(footer) == 0 {
				footer = append(footer, "Totals")
			} else {
				footer = append(footer, "")
			}
			if textColumn(k, j) {
				align = append(align, tw.AlignLeft)
			} else {
				align = append(align, tw.AlignRight)
			}
		}
	}
	if !noHitcount {
		header = append(header, "hitcount")
		footer = append(footer, strconv.FormatUint(t.Hits(), 10))
		align = append(align, tw.AlignRight)
	}
	for i, c := range cols {
		header = append(header, fieldLabel(c.spec))
		switch c.spec.Mod {
		case parse.ModPercent:
			// The share of the dropped events, when there are some.
			if d := c.dropped(t); t.Dropped > 0 {
				footer = append(footer, "dropped "+percentText(d, stats[i].total))
			} else {
				footer = append(footer, "")
			}
			align = append(align, tw.AlignRight)
		case parse.ModGraph:
			footer = append(footer, "")
			align = append(align, tw.AlignLeft)
		case parse.ModHex:
			footer = append(footer, strconv.FormatUint(stats[i].total, 16))
			align = append(align, tw.AlignRight)
		default:
			if cols[i].signed {
				footer = append(footer, strconv.FormatInt(int64(stats[i].total), 10))
			} else {
				footer = append(footer, strconv.FormatUint(stats[i].total, 10))
			}
			align = append(align, tw.AlignRight)
		}
	}

	footAlign := slices.Clone(align)
	if len(footAlign) > 0 {
		footAlign[0] = tw.AlignLeft // "Totals"
	}
	tbl := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithFooterAlignmentConfig(tw.CellAlignment{PerColumn: footAlign}),
	)
	tbl.Header(header)
	var val []byte
	var cells []any
	for i := range t.Entries {
		e := &t.Entries[i]
		row := make([]string, 0, len(header))
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
			switch cols[j].spec.Mod {
			case parse.ModPercent:
				row = append(row, percentText(v, stats[j].total))
			case parse.ModGraph:
				val = appendBar(val[:0], v, stats[j].max)
				row = append(row, strings.TrimSpace(string(val)))
			case parse.ModHex:
				row = append(row, strconv.FormatUint(v, 16))
			default:
				row = append(row, cellText(cols[j].cell(e)))
			}
		}
		if err := tbl.Append(row); err != nil {
			return err
		}
	}
	tbl.Footer(footer)
	return tbl.Render()
}
