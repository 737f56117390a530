package parse

import (
	"errors"
	"strings"
	"testing"
)

// TestFilterErrorsKernelWords is a table of bad filters, one or more of
// each class of error the kernel reports (grammar.md §2.4), with gtrace's
// exact message (the kernel's words, then what exactly is wrong) and the
// column of the caret, which is under the offending token's first
// character (the kernel's lands after the unknown field name and its
// blank, or one right of a bad value: grammar.md §12.1).
func TestFilterErrorsKernelWords(t *testing.T) {
	waking := readTestFormat(t, "sched.sched_waking")
	tests := []struct {
		src  string
		msg  string
		col  int // 1-based column of the caret
		hint string
	}{
		{`pid = 1`, `Invalid operator: "="`, 5, `use "==" to compare`},
		{`pid`, `Invalid operator: missing operator after "pid"`, 1, "compare the field with ==, !=, <, <=, >, >=, & or ~"},
		{`pid !~ "x"`, `Invalid operator: "!~"`, 5, `there is no "!~": negate the pattern instead, field ~ "!pattern"`},
		{`pid.foo == 1`, `Invalid operator: unknown field modifier ".foo"`, 4, "filters know .ustring and .function"},
		{`(pid == 1`, `Too many '(': this '(' is never closed`, 1, "add a ')' to close it"},
		{`((pid == 1)`, `Too many '(': this '(' is never closed`, 1, "add a ')' to close it"},
		{`pid == 1)`, `Too few '(': this ')' closes nothing`, 9, ""},
		{`comm == "abc`, `Missing matching quote: this " is never closed`, 9, `strings are quoted "..." and cannot contain their own quote`},
		{`pid == CPUS 0`, `Missing '{': CPUS needs a list in braces`, 8, "write CPUs as CPUS{0-3,7}"},
		{`pid == CPUS{0`, `Missing '}': CPUS{ is never closed`, 8, ""},
		{`comm == "` + strings.Repeat("a", 300) + `"`, `Operand too long: the string has 300 bytes, max 255`, 9, ""},
		{`comm == 1`, `Expecting string field: expected a string for field "comm" (char[16])`, 9, `quote it: "1"`},
		{`pid == "abc"`, `Expecting numeric field: expected a number for field "pid" (pid_t), found "abc"`, 8, ""},
		{`pid ~ "x"`, `Expecting numeric field: "~" needs a string field, and field "pid" (pid_t) is numeric`, 5, "numbers allow ==, !=, <, <=, >, >= and &"},
		{`comm < "x"`, `Illegal operation for field type: "<" does not apply to string field "comm" (char[16])`, 6, "strings allow ==, != and ~ (glob)"},
		{`comm & CPUS{0}`, `Illegal operation for field type: "&" does not apply to string field "comm" (char[16])`, 6, "strings allow ==, != and ~ (glob)"},
		{`pid.function == 1`, `Illegal operation for field type: .function needs a long-sized field, and "pid" is pid_t`, 4, ".function matches a kernel address against a function's name"},
		{`pdi == 1`, `Field not found: "pdi" in sched:sched_waking`, 1, `did you mean "pid"?`},
		{`(pid >= 10 && pid < 15) || piid == 17`, `Field not found: "piid" in sched:sched_waking`, 28, `did you mean "pid"?`},
		{`pid == 08`, `Illegal integer value: "08"`, 8, "a leading 0 makes the number octal; write it without the 0"},
		{`pid == 1x`, `Illegal integer value: "1x"`, 8, "numbers are decimal, 0x hex or 0 octal"},
		{`pid == 99999999999999999999`, `Illegal integer value: "99999999999999999999" does not fit in 64 bits`, 8, "numbers must fit in 64 bits"},
		{`prio == 0x100000000`, `Illegal integer value: 0x100000000 out of range for the 4-byte field "prio" (int)`, 9, "the kernel would compare it cut to 32 bits; give a value the field can hold"},
		{`pid & 1 & pid == 2`, `Too many terms in predicate expression: unexpected "&"`, 9, `use "&&" to join predicates`},
		{`pid == 1 pid == 2`, `Too many terms in predicate expression: unexpected "pid"`, 10, `join predicates with "&&" or "||"`},
		{`pid == 1 &&`, `Meaningless filter expression: "&&" at the end of the filter has no operand`, 10, ""},
		{`pid == CPUS{a}`, `Invalid cpulist: "a": "a" is not a CPU number or range`, 8, "write CPUs as a list such as CPUS{0-3,7}"},
		{`pid ==`, `Invalid value (did you forget quotes)? missing value after "=="`, 5, ""},
		{`pid == )`, `Invalid value (did you forget quotes)? expected a value after "==", found ")"`, 8, "a value is a number, a quoted string or CPUS{list}"},
		{"comm == \"a\x00b\"", `Error: the string contains a NUL byte`, 11, ""},
		{`&& pid == 1`, `Field not found: expected a field name, found "&&"`, 1, ""},
		{`   `, `No filter found: the filter is empty`, 4, ""},
		{`!`, `Meaningless filter expression: "!" at the end of the filter has no operand`, 1, ""},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		e, err := ParseFilter("-f", tt.src)
		if err == nil {
			_, err = BindFilter("-f", tt.src, e, waking)
		}
		var pe *Error
		if !errors.As(err, &pe) {
			t.Errorf("%q: %v, want a *parse.Error", tt.src, err)
			continue
		}
		if _, col := pe.Position(); pe.Msg != tt.msg || col != tt.col || pe.Hint != tt.hint {
			t.Errorf("%q: %q at column %d, hint %q; want %q at column %d, hint %q", tt.src, pe.Msg, col, pe.Hint, tt.msg, tt.col, tt.hint)
		}
		for _, w := range kernelWords {
			if strings.HasPrefix(pe.Msg, w) {
				seen[w] = true
			}
		}
	}
	// .function's "Function not found" comes from ResolveFunctions.
	for _, w := range kernelWords {
		if !seen[w] && w != kFunctionNotFound {
			t.Errorf("no case of %q", w)
		}
	}
}
