package hist

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
)

// jsonTable is one hist in --format json.
type jsonTable struct {
	Event   string      `json:"event"`
	Trigger string      `json:"trigger"`
	Entries []jsonEntry `json:"entries"`
	// Snapshot is what a snapshot() action remembered, when one fired.
	Snapshot *jsonSnapshot `json:"snapshot,omitempty"`
	Totals   jsonTotals    `json:"totals"`
}

type jsonEntry struct {
	Keys     jsonKeys    `json:"keys"`
	Hitcount uint64      `json:"hitcount"`
	Values   []jsonValue `json:"values"`
	// Actions are the entry's onmax and onchange actions (but snapshot()).
	Actions []jsonAction `json:"actions,omitempty"`
}

// jsonAction is what an onmax or onchange action keeps in an entry.
type jsonAction struct {
	Handler string `json:"handler"` // "onmax" or "onchange"
	Value   uint64 `json:"value"`
	// Saved are the save() fields, by name: a number, a string, or null
	// when the save action has not fired for the entry.
	Saved jsonKeys `json:"saved"`
}

// jsonSnapshot is the triggering value and key of a hist's last snapshot.
type jsonSnapshot struct {
	Handler string   `json:"handler"` // as the kernel prints it: "onmax($wakeup_lat)"
	Value   uint64   `json:"value"`
	Keys    jsonKeys `json:"keys"`
}

// jsonKeys are the key columns of an entry (keyColumns), an object whose
// members are in column order.
type jsonKeys struct {
	names []string
	cells []any
}

func (k jsonKeys) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, name := range k.names {
		if i > 0 {
			b = append(b, ',')
		}
		n, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(k.cells[i])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, n...), ':'), v...)
	}
	return append(b, '}'), nil
}

type jsonValue struct {
	Name     string `json:"name"`
	Modifier string `json:"modifier"`
	Value    any    `json:"value"` // uint64, or int64 for a signed value
}

type jsonTotals struct {
	Hits    uint64 `json:"hits"`
	Entries int    `json:"entries"`
	Dropped uint64 `json:"dropped"`
	Lost    uint64 `json:"lost"`
	// DroppedValues are, when events were dropped, the sums of each
	// .percent column over them.
	DroppedValues []jsonValue `json:"dropped_values,omitempty"`
}

// WriteJSON writes tables as a JSON array, one object per table:
//
//	{"event": "sys:ev", "trigger": "<trigger info>",
//	 "entries": [{"keys": {"<column>": value, ...}, "hitcount",
//	              "values": [{"name", "modifier", "value"}]}],
//	 "totals": {"hits", "entries", "dropped", "lost"[, "dropped_values"]}}
//
// An entry's keys are the columns CSV gives them (keyColumns), in order,
// each a number or a string: the raw value under the field's name and,
// for keys the kernel prints as names, the name beside it, as in
// {"common_pid": 10752, "common_pid.execname": "memfd:sealed-91",
// "id": 202, "id.syscall": "sys_futex"}. Values are the raw sums,
// including hitcount.percent and hitcount.graph (as the hitcount); the
// hitcount is always given, even with nohitcount. Modifiers are as written
// in the trigger ("hex", "percent"), "" for none. Entries are in their
// current order (call Table.Sort first).
//
// The hists of an inter-event session add, to an entry with onmax or
// onchange actions, "actions": [{"handler": "onmax", "value": N,
// "saved": {"<field>": value or null, ...}}], and to a hist whose
// snapshot() fired, "snapshot": {"handler": "onmax($v)", "value": N,
// "keys": {...}} (keys as an entry's); variables are not values, and
// appear only in the trigger.
//
// When events were dropped, the totals' "dropped_values" give, for each
// .percent column, its sum over the dropped events ({"name", "modifier",
// "value"}; the dropped count for hitcount.percent): an entry's share, as
// text prints it, is its value over the column's sum plus that.
func WriteJSON(w io.Writer, tables []*Table, triggerInfo []string, r Resolver) error {
	if len(triggerInfo) != len(tables) {
		return fmt.Errorf("write hist json: %d tables but %d trigger descriptions", len(tables), len(triggerInfo))
	}
	out := make([]jsonTable, len(tables))
	for i, t := range tables {
		out[i] = jsonTableOf(t, triggerInfo[i], r)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write hist json: %w", err)
	}
	return nil
}

// WriteNDJSON writes tables as WriteJSON's objects, one a line: the hists
// that end a stream of NDJSON events (gtrace filter --format ndjson).
func WriteNDJSON(w io.Writer, tables []*Table, triggerInfo []string, r Resolver) error {
	if len(triggerInfo) != len(tables) {
		return fmt.Errorf("write hist ndjson: %d tables but %d trigger descriptions", len(tables), len(triggerInfo))
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i, t := range tables {
		if err := enc.Encode(jsonTableOf(t, triggerInfo[i], r)); err != nil {
			return fmt.Errorf("write hist ndjson: %w", err)
		}
	}
	return nil
}

func jsonTableOf(t *Table, trigger string, r Resolver) jsonTable {
	p := t.Plan
	cols := valueColumns(p)
	var names []string
	for i := range p.Keys {
		names = append(names, keyColumns(&p.Keys[i])...)
	}
	jt := jsonTable{
		Event:   p.Event,
		Trigger: trigger,
		Entries: make([]jsonEntry, len(t.Entries)),
		Totals:  jsonTotals{Hits: t.Hits(), Entries: len(t.Entries), Dropped: t.Dropped, Lost: t.Lost},
	}
	if t.Dropped > 0 {
		for j := range cols {
			if c := &cols[j]; c.spec.Mod == parse.ModPercent {
				var v any = c.dropped(t)
				if c.signed {
					v = int64(c.dropped(t)) // as the column's cells
				}
				jt.Totals.DroppedValues = append(jt.Totals.DroppedValues, jsonValue{Name: c.spec.Name, Modifier: modifierText(c.spec), Value: v})
			}
		}
	}
	for i := range t.Entries {
		e := &t.Entries[i]
		je := jsonEntry{Keys: jsonKeys{names: names}, Hitcount: e.Hitcount, Values: make([]jsonValue, len(cols))}
		for j := range p.Keys {
			if p.Keys[j].Kind == KeyStack {
				je.Keys.cells = append(je.Keys.cells, e.Keys[j].Stack.jsonFrames(r))
				continue
			}
			je.Keys.cells = keyCells(je.Keys.cells, &p.Keys[j], &e.Keys[j], e.Comm, r)
		}
		for j := range cols {
			c := &cols[j]
			je.Values[j] = jsonValue{Name: c.spec.Name, Modifier: modifierText(c.spec), Value: c.cell(e)}
		}
		for _, a := range e.Actions {
			ja := jsonAction{Handler: a.Handler.String(), Value: a.Value, Saved: jsonKeys{names: []string{}, cells: []any{}}}
			for _, f := range a.Saved {
				var v any
				switch {
				case !f.Set:
				case f.Str:
					v = f.Text
				default:
					v = f.Num
				}
				ja.Saved.names = append(ja.Saved.names, f.Name)
				ja.Saved.cells = append(ja.Saved.cells, v)
			}
			je.Actions = append(je.Actions, ja)
		}
		jt.Entries[i] = je
	}
	if sn := t.Snapshot; sn != nil {
		js := &jsonSnapshot{Handler: sn.Handler, Value: sn.Value, Keys: jsonKeys{names: names}}
		for j := range p.Keys {
			js.Keys.cells = keyCells(js.Keys.cells, &p.Keys[j], &sn.Keys[j], sn.Comm, r)
		}
		jt.Snapshot = js
	}
	return jt
}

// keyRaw is a key's value as data: the string (up to a NUL, as the kernel
// keeps it), or the number, signed for signed fields that are not
// bucketed.
func keyRaw(k *Key, v *KeyValue) any {
	switch {
	case k.Kind == KeyString:
		return untilNUL(v.Str)
	case signedKey(k):
		return int64(v.Num)
	}
	return v.Num
}

// signedKey reports whether key k's numbers are signed: a signed field or
// expression not transformed by .log2 or .buckets=N.
func signedKey(k *Key) bool {
	return k.Kind == KeyNumber && k.Signed && k.Spec.Mod != parse.ModLog2 && k.Spec.Mod != parse.ModBuckets
}

// modifierText is a field's modifier as written in a trigger: "hex",
// "buckets=10", "" for none.
func modifierText(f parse.HistField) string {
	if f.Mod == parse.ModBuckets {
		return "buckets=" + strconv.FormatUint(f.Buckets, 10)
	}
	return f.Mod.String()
}
