package eval

import (
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// FuzzMatch runs arbitrary filters on arbitrary records: Match must not
// panic, whatever the record's bytes and length, and the canonical text
// of a filter must match exactly what the filter matches.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{
		`name == "abc" || path ~ "*/l?" && small > 3`,
		`mask & CPUS{1-3} || !(tiny < -1) && half != 0x10`,
		`big & 0x8000000000000000 || comm ~ "[!a-c]*x" || cpu == CPUS{2}`,
		`common_pid == 3 && addr.function == foo || name ~ "*\"*"`,
	} {
		f.Add(s, []byte("\x07\x00\x00\x00\x03\x00\x00\x00\x28\x00\x03\x00\x00\x00\x00\x00abc\x00/usr/bin/ls"), "bash", 2, int32(-1))
	}
	format := format(f, madeUpFormat)
	f.Fuzz(func(t *testing.T, src string, rec []byte, comm string, cpu int, pid int32) {
		bf := bindOrNil(src, format)
		if bf == nil {
			return
		}
		c := Context{PID: pid, CPU: cpu, Comm: comm}
		got := Match(bf, rec, c)
		canon := bf.Expr.String()
		bf2 := bindOrNil(canon, format)
		if bf2 == nil {
			t.Fatalf("%q binds, its canonical form %q does not", src, canon)
		}
		if again := Match(bf2, rec, c); again != got {
			t.Fatalf("%q matches %v, its canonical form %q %v", src, got, canon, again)
		}
	})
}

func bindOrNil(src string, f *parse.Format) *parse.BoundFilter {
	e, err := parse.ParseFilter("f", src)
	if err != nil {
		return nil
	}
	bf, err := parse.BindFilter("f", src, e, f)
	if err != nil {
		return nil
	}
	return bf
}
