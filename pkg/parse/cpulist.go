package parse

import (
	"strconv"
	"strings"
)

// MaxListCPU bounds the CPU numbers of a CPUList (exclusive). It is above
// MaxCPU because trace-cmd report --cpu numbers the CPUs of a file's
// ring-buffer instances one after the other.
const MaxListCPU = 1 << 16

// CPUList parses a CPU list such as "0,2-3": CPU numbers and inclusive
// ranges separated by commas, as the kernel's cpulist files and
// trace-cmd's --cpu write them, each CPU below MaxListCPU. It returns the
// CPUs sorted, each once. name says what the input is in errors (for
// example "--cpu"); errors are *Error pointing at the bad item.
func CPUList(name, src string) ([]int, error) {
	ranges, err := cpuRanges(src, MaxListCPU)
	if err != nil {
		if src == "" {
			return nil, Errorf(name, src, 0, 0, "empty CPU list").WithHint("write CPUs as a list such as 0,2-3")
		}
		return nil, Errorf(name, src, err.off, err.end, "invalid CPU list item %q", src[err.off:err.end]).
			WithHint("%s; write CPUs as a list such as 0,2-3", err.msg)
	}
	top := 0
	for _, r := range ranges {
		top = max(top, r.Last)
	}
	// Counting range starts and ends keeps the work linear, however many
	// ranges overlap.
	edges := make([]int, top+2)
	for _, r := range ranges {
		edges[r.First]++
		edges[r.Last+1]--
	}
	var cpus []int
	n := 0
	for c := 0; c <= top; c++ {
		if n += edges[c]; n > 0 {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// listError is why a CPU list is invalid: the bad item's offsets in the
// list and the reason.
type listError struct {
	off, end int
	msg      string
}

// cpuRanges parses a CPU list into its ranges, in the order written, each
// CPU below limit. It is the parser of both CPUList and the filter
// language's CPUS{...}.
func cpuRanges(list string, limit int) ([]CPURange, *listError) {
	if list == "" {
		return nil, &listError{msg: "empty list"}
	}
	var out []CPURange
	off := 0
	for item := range strings.SplitSeq(list, ",") {
		first, last, isRange := strings.Cut(item, "-")
		a, ok1 := cpuNumber(first, limit)
		b := a
		ok2 := true
		if isRange {
			b, ok2 = cpuNumber(last, limit)
		}
		switch {
		case !ok1 || !ok2:
			return nil, &listError{off, off + len(item), strconv.Quote(item) + " is not a CPU number or range"}
		case b < a:
			return nil, &listError{off, off + len(item), "range " + strconv.Quote(item) + " is backwards"}
		}
		out = append(out, CPURange{First: a, Last: b})
		off += len(item) + 1
	}
	return out, nil
}

// cpuNumber parses a decimal CPU number below limit.
func cpuNumber(s string, limit int) (int, bool) {
	if s == "" || len(s) > 6 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n < limit
}
