package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// Selector is one -e PATTERN with the -f FILTER that follows it.
type Selector struct {
	Pattern string // the events, as Match takes them
	Filter  string // the filter expression, "" for none
	// FilterName names the filter's source in errors, e.g. "-f" or "-F";
	// "" means "filter".
	FilterName string
	// FilterSrc, when not "", is a larger string that Pattern and Filter
	// were taken from, such as report's 'EVENT: FILTER'; errors then
	// point into it. Filter is FilterSrc[FilterOff:FilterOff+len(Filter)]
	// and Pattern FilterSrc[PatternOff:PatternOff+len(Pattern)].
	FilterSrc  string
	FilterOff  int
	PatternOff int
}

// Selected is one event a selector chose.
type Selected struct {
	Format *parse.Format // the event's format (System set); the event's System and Name
	Text   string        // the format file's text, verbatim
	// Filter is the selector's filter bound to Format, its .function
	// values resolved; nil when the selector has no filter.
	Filter *parse.BoundFilter
	// Optional is set when the event came from a glob or from a pattern
	// that named several events: a caller may leave it out (with a
	// warning) when it cannot trace it, rather than fail.
	Optional bool
}

// Event returns the event's name.
func (s *Selected) Event() Event { return Event{s.Format.System, s.Format.Name} }

// SelectOptions tune Select.
type SelectOptions struct {
	// Funcs resolves the .function values of filters; nil means the
	// catalog's kernel symbols (Funcs(c)), read only when a filter has
	// one.
	Funcs parse.FuncResolver
}

// Select resolves selectors against a catalog: for each, in order, it
// matches the pattern, reads the formats, parses and binds the filter to
// each event, and resolves the filter's .function values. An event named
// by several selectors is selected once, where it was first named, with
// the filter (and Optional) of the last selector that names it.
//
// Errors in filters are *parse.Error; an unknown pattern is an
// *EventError, or, for a selector with a FilterSrc, a *parse.Error that
// points at the pattern. The filters' warnings (legal constructs that are
// probably mistakes), each once, are returned for the caller to print.
func Select(c Catalog, sels []Selector, o SelectOptions) ([]*Selected, []*parse.Error, error) {
	funcs := o.Funcs
	if funcs == nil {
		funcs = Funcs(c)
	}
	var out []*Selected
	var warns []*parse.Error
	index := map[Event]int{}
	for i := range sels {
		s := &sels[i]
		if err := s.check(); err != nil {
			return nil, nil, err
		}
		var expr parse.Expr
		if s.Filter != "" {
			var err error
			if expr, err = parse.ParseFilter(s.filterName(), s.paddedFilter()); err != nil {
				return nil, nil, s.retarget(err)
			}
		}
		evs, err := Match(c, s.Pattern)
		if err != nil {
			return nil, nil, s.patternError(c, err)
		}
		optional := len(evs) > 1 || strings.ContainsAny(s.Pattern, "*?[")
		for _, e := range evs {
			fm, text, err := c.Format(e)
			if err != nil {
				return nil, nil, err
			}
			sel := &Selected{Format: fm, Text: text, Optional: optional}
			if expr != nil {
				if sel.Filter, err = s.bind(expr, fm, funcs); err != nil {
					return nil, nil, err
				}
				for _, w := range sel.Filter.Warnings {
					warns = addWarning(warns, w)
				}
			}
			if j, ok := index[e]; ok {
				out[j] = sel
				continue
			}
			index[e] = len(out)
			out = append(out, sel)
		}
	}
	return out, warns, nil
}

// bind binds the selector's filter to an event's format and resolves its
// .function values.
func (s *Selector) bind(expr parse.Expr, fm *parse.Format, funcs parse.FuncResolver) (*parse.BoundFilter, error) {
	bf, err := parse.BindFilter(s.filterName(), s.paddedFilter(), expr, fm)
	if err != nil {
		return nil, s.retarget(err)
	}
	if s.FilterSrc != "" {
		// The padded filter and FilterSrc agree at every offset into
		// the filter: later errors can point into FilterSrc.
		bf.Src = s.FilterSrc
		for i, w := range bf.Warnings {
			bf.Warnings[i] = s.retarget(w).(*parse.Error)
		}
	}
	if err := bf.ResolveFunctions(funcs); err != nil {
		return nil, s.retarget(err)
	}
	return bf, nil
}

// addWarning appends w unless an equal warning is there already (a filter
// bound to many events warns the same for each).
func addWarning(warns []*parse.Error, w *parse.Error) []*parse.Error {
	for _, x := range warns {
		if *x == *w {
			return warns
		}
	}
	return append(warns, w)
}

// check makes sure that the offsets of a selector with a FilterSrc are
// right.
func (s *Selector) check() error {
	if s.FilterSrc == "" {
		return nil
	}
	in := func(sub string, off int) bool {
		return off >= 0 && off+len(sub) <= len(s.FilterSrc) && s.FilterSrc[off:off+len(sub)] == sub
	}
	if s.Filter != "" && !in(s.Filter, s.FilterOff) || !in(s.Pattern, s.PatternOff) {
		return fmt.Errorf("selector %q: its pattern and filter are not at their offsets in %q", s.Pattern, s.FilterSrc)
	}
	return nil
}

func (s *Selector) filterName() string {
	if s.FilterName == "" {
		return "filter"
	}
	return s.FilterName
}

// paddedFilter is the filter text with as many blanks before it as there
// are bytes before it in FilterSrc, so that offsets into it are offsets
// into FilterSrc.
func (s *Selector) paddedFilter() string {
	if s.FilterSrc == "" {
		return s.Filter
	}
	return strings.Repeat(" ", s.FilterOff) + s.Filter
}

// retarget makes a *parse.Error about the padded filter point into
// FilterSrc.
func (s *Selector) retarget(err error) error {
	var pe *parse.Error
	if s.FilterSrc == "" || !errors.As(err, &pe) {
		return err
	}
	out := parse.Errorf(pe.Name, s.FilterSrc, pe.Off, pe.End, "%s", pe.Msg)
	out.Hint = pe.Hint
	return out
}

// patternError is the error of a pattern that named nothing: a caret
// under it in FilterSrc, if the selector has one.
func (s *Selector) patternError(c Catalog, err error) error {
	var ee *EventError
	if s.FilterSrc == "" || !errors.As(err, &ee) {
		return err
	}
	pe := parse.Errorf(s.filterName(), s.FilterSrc, s.PatternOff, s.PatternOff+len(s.Pattern), "no event %q in %s", s.Pattern, shortWhere(c))
	pe.Hint = "events are NAME, SYSTEM:NAME, SYSTEM or a glob"
	if len(ee.Suggestions) > 0 {
		pe.Hint = fmt.Sprintf("did you mean %s? %s", strings.Join(quoteAll(ee.Suggestions), ", "), pe.Hint)
	}
	if ee.List != "" {
		pe.Hint += "; " + ee.List + " shows them"
	}
	return pe
}
