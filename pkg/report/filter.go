package report

import (
	"strings"

	"github.com/gtrace/gtrace/pkg/catalog"
	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// EventFilter keeps the records that report's -F arguments select.
type EventFilter struct {
	// specs holds, per -F, the bound filter of each event it names, by
	// event ID (nil: every record of the event).
	specs []map[int]*parse.BoundFilter
}

// ParseEventFilters binds report's -F arguments against the events of a
// catalog, normally that of the file (catalog.File). Each is trace-cmd's
// 'EVENT[,EVENT...][: FILTER]': EVENT is NAME, SYSTEM:NAME, SYSTEM or a
// glob (as catalog.Match takes it), FILTER an event filter, whose
// .function values are resolved with the catalog's kernel symbols. A
// record passes when one of the arguments names its event and its filter,
// if any, matches; several arguments that name the same event are or-ed,
// as trace-cmd does. It returns nil for no arguments, and the filters'
// warnings. Errors are *parse.Error pointing into the argument.
func ParseEventFilters(c catalog.Catalog, specs []string) (*EventFilter, []*parse.Error, error) {
	if len(specs) == 0 {
		return nil, nil, nil
	}
	ef := &EventFilter{}
	var warns []*parse.Error
	for _, spec := range specs {
		if _, off := splitEventFilter(spec); off >= 0 && strings.TrimSpace(spec[off:]) == "" {
			return nil, nil, parse.Errorf("-F", spec, len(spec), len(spec), "empty filter").
				WithHint("write 'EVENT: FILTER', or EVENT alone for all its records")
		}
		sel, w, err := catalog.Select(c, selectors(spec), catalog.SelectOptions{})
		if err != nil {
			return nil, nil, err
		}
		warns = append(warns, w...)
		bound := map[int]*parse.BoundFilter{}
		for _, s := range sel {
			bound[s.Format.ID] = s.Filter
		}
		ef.specs = append(ef.specs, bound)
	}
	return ef, warns, nil
}

// selectors turns one -F argument into a selector per event it names, all
// with its filter.
func selectors(spec string) []catalog.Selector {
	events, filterOff := splitEventFilter(spec)
	base := catalog.Selector{FilterName: "-F", FilterSrc: spec}
	if filterOff >= 0 {
		base.Filter, base.FilterOff = spec[filterOff:], filterOff
	}
	var sels []catalog.Selector
	off := 0
	for _, name := range strings.Split(events, ",") {
		s := base
		s.Pattern = strings.TrimSpace(name)
		s.PatternOff = off + strings.Index(name, s.Pattern)
		sels = append(sels, s)
		off += len(name) + 1
	}
	return sels
}

// filterBytes are bytes of filters that no event name has.
const filterBytes = " =<>!&|~"

// splitEventFilter splits 'EVENTS: FILTER' and returns the events part and
// the offset of the filter (-1 if none). "sys:event: filter" keeps the
// system: the separator is the first ':' that is followed by a blank, or
// else the second ':' of a "word:word:" prefix, or else the only ':',
// unless what follows it has no operator: "sys:event" is an event.
func splitEventFilter(spec string) (string, int) {
	if i := strings.Index(spec, ": "); i >= 0 {
		return spec[:i], i + 1
	}
	first := strings.IndexByte(spec, ':')
	if first < 0 {
		return spec, -1
	}
	if second := strings.IndexByte(spec[first+1:], ':'); second >= 0 && !strings.ContainsAny(spec[:first+1+second], filterBytes) {
		return spec[:first+1+second], first + 2 + second
	}
	if rest := spec[first+1:]; rest != "" && !strings.ContainsAny(rest, filterBytes) && !strings.ContainsAny(spec[:first], filterBytes) {
		return spec, -1
	}
	return spec[:first], first + 1
}

// match reports whether a record passes the filter: fm is its event's
// format, nil if unknown. The filter sees the record's common_pid and the
// task name the file saved for it.
func (ef *EventFilter) match(p *printer, fm *parse.Format, r *tracedat.Record) bool {
	if fm == nil {
		return false
	}
	for _, bound := range ef.specs {
		bf, ok := bound[fm.ID]
		if !ok {
			continue
		}
		if bf == nil {
			return true
		}
		pid, comm := int32(-1), ""
		if v, ok := parse.CommonPIDOrder(r.Data, p.order); ok {
			pid, comm = v, p.cmdlines[int(v)]
		}
		if eval.Match(bf, r.Data, eval.Context{PID: pid, CPU: r.CPU, Comm: comm}) {
			return true
		}
	}
	return false
}
