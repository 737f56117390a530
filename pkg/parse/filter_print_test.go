package parse

import (
	"reflect"
	"testing"
)

// bindText parses and binds src to f.
func bindText(tb testing.TB, src string, f *Format) *BoundFilter {
	tb.Helper()
	e, err := ParseFilter("-f", src)
	if err != nil {
		tb.Fatalf("ParseFilter(%q) = %v", src, err)
	}
	bf, err := BindFilter("-f", src, e, f)
	if err != nil {
		tb.Fatalf("BindFilter(%q) = %v", src, err)
	}
	return bf
}

func TestBoundFilterString(t *testing.T) {
	for _, tc := range []struct{ format, src, want string }{
		{"syscalls.sys_enter_write", "fd==1&&count<=0x10", "fd == 1 && count <= 16"},
		{"syscalls.sys_enter_write", "fd == 010", "fd == 8"},
		{"syscalls.sys_enter_write", "((fd == 1)) || (count > 2 && count < 5)", "fd == 1 || count > 2 && count < 5"},
		{"syscalls.sys_enter_write", "(fd == 1 || fd == 2) && count & 0x7", "(fd == 1 || fd == 2) && count & 7"},
		{"syscalls.sys_enter_write", "!(fd == 1 || fd == 2)", "!(fd == 1 || fd == 2)"},
		{"syscalls.sys_enter_write", "!fd == 1", "!fd == 1"},
		{"syscalls.sys_enter_write", "fd == 1 && (count == 2 && common_pid != -1)", "fd == 1 && count == 2 && common_pid != -1"},
		{"syscalls.sys_enter_write", "comm ~ bash", `comm ~ "bash"`},
		{"syscalls.sys_enter_write", `comm == 'a"b'`, `comm == 'a"b'`},
		{"syscalls.sys_enter_write", `buf.ustring ~ '*[!x]?'`, `buf.ustring ~ "*[!x]?"`},
		{"syscalls.sys_enter_write", "cpu & CPUS{3,0-1}", "cpu & CPUS{3,0-1}"},
		{"syscalls.sys_enter_write", "CPU == CPUS{2-2}", "CPU == CPUS{2}"},
		{"syscalls.sys_enter_openat", "dfd == 0xffffff9c", "dfd == -100"},
		{"syscalls.sys_enter_openat", "dfd == -0144", "dfd == -100"},
		{"ipi.ipi_send_cpumask", "cpumask & CPUS{0-3}", "cpumask & CPUS{0-3}"},
		{"timer.hrtimer_start", "function.function == hrtimer_wakeup", "function.function == hrtimer_wakeup"},
		{"timer.hrtimer_start", "function.function != 0xFFFF0010", "function.function != 0xffff0010"},
		{"timer.hrtimer_start", `function.function == "a b"`, `function.function == "a b"`},
	} {
		bf := bindText(t, tc.src, readTestFormat(t, tc.format))
		if got := bf.String(); got != tc.want {
			t.Errorf("%s: BoundFilter(%q).String() = %q, want %q", tc.format, tc.src, got, tc.want)
		}
		checkBoundRoundTrip(t, bf)
	}
}

// checkBoundRoundTrip checks that bf's normal form binds to the same
// filter and prints the same again.
func checkBoundRoundTrip(tb testing.TB, bf *BoundFilter) {
	tb.Helper()
	text := bf.String()
	e, err := ParseFilter("-f", text)
	if err != nil {
		tb.Fatalf("ParseFilter(%q) = %v; it is the normal form of %q", text, err, bf.Src)
	}
	bf2, err := BindFilter("-f", text, e, bf.Format)
	if err != nil {
		tb.Fatalf("BindFilter(%q) = %v; it is the normal form of %q", text, err, bf.Src)
	}
	if !sameBound(bf.Root, bf2.Root) {
		tb.Fatalf("the normal form %q of %q binds to another filter", text, bf.Src)
	}
	if again := bf2.String(); again != text {
		tb.Fatalf("the normal form %q of %q prints as %q", text, bf.Src, again)
	}
}

// sameBound compares bound trees by what they do, not how they were
// written.
func sameBound(a, b BoundExpr) bool {
	switch a := a.(type) {
	case *BoundLogical:
		b, ok := b.(*BoundLogical)
		if !ok || a.Op != b.Op || len(a.X) != len(b.X) {
			return false
		}
		for i := range a.X {
			if !sameBound(a.X[i], b.X[i]) {
				return false
			}
		}
		return true
	case *BoundNot:
		b, ok := b.(*BoundNot)
		return ok && sameBound(a.X, b.X)
	case *BoundPred:
		b, ok := b.(*BoundPred)
		if !ok {
			return false
		}
		x, y := *a, *b
		x.Pred, y.Pred = nil, nil
		return a.Pred.Field == b.Pred.Field && a.Pred.Mod == b.Pred.Mod && reflect.DeepEqual(x, y)
	}
	return false
}

// FuzzBoundFilterString checks that every filter that binds to a format
// has a normal form that binds to the same filter and prints the same.
func FuzzBoundFilterString(f *testing.F) {
	for _, s := range []string{
		"fd == 1 && (count > 0x10 || !(comm ~ \"*sh\"))",
		"cpu & CPUS{0-3,7} || common_pid != -1",
		"buf.ustring ~ 'a?[!b-c]\\\\*'",
		"((((fd == 010))))",
		"comm == bash&&count<=-5",
		"!(fd == 1) || !!(count & 3)",
		"comm != 'x\"y'",
	} {
		f.Add(s)
	}
	format := readTestFormat(f, "syscalls.sys_enter_write")
	f.Fuzz(func(t *testing.T, src string) {
		e, err := ParseFilter("f", src)
		if err != nil {
			return
		}
		bf, err := BindFilter("f", src, e, format)
		if err != nil {
			return
		}
		checkBoundRoundTrip(t, bf)
	})
}
