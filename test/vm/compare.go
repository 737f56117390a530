package vm

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// CheckPlan checks what gtrace's --dry-run plan (as init.sh's plan prints
// it) says of where its programs run. With the kernel's BTF visible, some
// program must be on a raw tracepoint (tp_btf: a Tracing program); with it
// hidden, as on a kernel without CONFIG_DEBUG_INFO_BTF, the plan must say
// so, and every program must be on a classic tracepoint.
func CheckPlan(plan string, btf bool) error {
	const noBTF = "no kernel BTF (/sys/kernel/btf/vmlinux)"
	raw := strings.Contains(plan, " on raw tracepoint ")
	tracing := strings.Contains(plan, " (Tracing, ")
	switch {
	case !strings.Contains(plan, " instructions):"):
		return fmt.Errorf("the plan names no program")
	case btf && (!raw || !tracing):
		return fmt.Errorf("with the kernel's BTF, no program on a raw tracepoint (tp_btf)")
	case btf && strings.Contains(plan, noBTF):
		return fmt.Errorf("the kernel's BTF is there, but the plan says %q", noBTF)
	case !btf && !strings.Contains(plan, noBTF):
		return fmt.Errorf("without the kernel's BTF, the plan does not say %q", noBTF)
	case !btf && (raw || tracing):
		return fmt.Errorf("without the kernel's BTF, a program on a raw tracepoint (tp_btf)")
	}
	return nil
}

// CheckProbePlan checks where gtrace's --dry-run plan of a record case
// with a probe (-K DEF) puts the probe's program, by the case's name: a
// case named fentry-* or fexit-* on the function's fentry or fexit, one
// named kprobe-fallback-* on its kprobe or kretprobe; other names are
// not checked.
func CheckProbePlan(name, plan string) error {
	var want []string
	switch {
	case strings.HasPrefix(name, "fentry-"):
		want = []string{"built at fentry "}
	case strings.HasPrefix(name, "fexit-"):
		want = []string{"built at fexit "}
	case strings.HasPrefix(name, "kprobe-fallback-"):
		want = []string{"built at kprobe ", "built at kretprobe "}
	default:
		return nil
	}
	for _, w := range want {
		if strings.Contains(plan, w) {
			return nil
		}
	}
	return fmt.Errorf("the plan does not say %q", strings.Join(want, `" or "`))
}

// CompareHist compares gtrace's hist text with the kernel's hist file. They
// must be equal byte for byte, except that entries with equal sort values
// may come in another order: the kernel's order among them is its hash
// table's, gtrace's is by key. Such runs of entries are compared as sets.
// The sort fields are read from the kernel's "# trigger info:" line.
func CompareHist(kernel, gtrace string) error {
	kl, gl := strings.Split(kernel, "\n"), strings.Split(gtrace, "\n")
	if len(kl) != len(gl) {
		return fmt.Errorf("gtrace printed %d lines, the kernel %d: %s", len(gl), len(kl), firstDiff(gl, kl))
	}
	sortBy := sortFields(kernel)
	for i := 0; i < len(kl); {
		if !isEntry(kl[i]) || !isEntry(gl[i]) {
			if kl[i] != gl[i] {
				return fmt.Errorf("line %d:\n  gtrace %s\n  kernel %s", i+1, gl[i], kl[i])
			}
			i++
			continue
		}
		// A run of entries with equal sort values.
		sig := signature(kl[i], sortBy)
		j := i + 1
		for j < len(kl) && isEntry(kl[j]) && signature(kl[j], sortBy) == sig {
			j++
		}
		k, g := slices.Clone(kl[i:j]), slices.Clone(gl[i:j])
		slices.Sort(k)
		slices.Sort(g)
		if !slices.Equal(k, g) {
			if j-i == 1 {
				return fmt.Errorf("line %d:\n  gtrace %s\n  kernel %s", i+1, gl[i], kl[i])
			}
			return fmt.Errorf("lines %d-%d (entries with %s), as sets: %s", i+1, j, sig, firstDiff(g, k))
		}
		i = j
	}
	return nil
}

func isEntry(line string) bool { return strings.HasPrefix(line, "{ ") }

var sortRE = regexp.MustCompile(`^# trigger info: hist:.*:sort=([^:\s]+)`)

// sortFields returns the names of the sort fields of a hist file.
func sortFields(hist string) []string {
	for _, line := range strings.Split(hist, "\n") {
		if m := sortRE.FindStringSubmatch(line); m != nil {
			var names []string
			for _, s := range strings.Split(m[1], ",") {
				name, _, _ := strings.Cut(s, ".")
				names = append(names, name)
			}
			return names
		}
	}
	return []string{"hitcount"}
}

// signature returns the text of an entry's sort fields: the word after
// "NAME:" for each, a value's before a key's.
func signature(entry string, fields []string) string {
	var b strings.Builder
	for _, f := range fields {
		// A value of that name first, then a key, as the kernel resolves sort=.
		i := strings.LastIndex(entry, "} ")
		if j := strings.Index(entry[i+1:], " "+f+": "); i >= 0 && j >= 0 {
			i += 1 + j
		} else {
			i = strings.Index(entry, " "+f+": ")
		}
		if i < 0 {
			b.WriteString(f + "=? ")
			continue
		}
		rest := strings.Fields(entry[i+len(f)+3:])
		if len(rest) > 0 {
			b.WriteString(f + "=" + strings.TrimRight(rest[0], ",") + " ")
		}
	}
	return strings.TrimSpace(b.String())
}

func firstDiff(got, want []string) string {
	for i := 0; i < len(got) || i < len(want); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("first difference at line %d:\n  gtrace %s\n  kernel %s", i+1, g, w)
		}
	}
	return "no line differs"
}

// eventRE matches an event line of trace-cmd report: COMM-PID [CPU]
// (FLAGS) TIMESTAMP: EVENT: TEXT.
var eventRE = regexp.MustCompile(`^\s*(.*-\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?\d+\.\d+:\s+(\S+):\s*(.*)$`)

// CompareRecord compares the trace-cmd report text of gtrace's recording
// with that of trace-cmd's recording of the same workload: the same events
// in the same order, from the same task and CPU, with the same text. The
// timestamps and the latency flags differ from run to run and are left
// out, as are the header lines.
func CompareRecord(kernel, gtrace string) error {
	k, g := eventLines(kernel), eventLines(gtrace)
	if len(k) == 0 {
		return fmt.Errorf("trace-cmd recorded no event")
	}
	if !slices.Equal(k, g) {
		return fmt.Errorf("gtrace recorded %d events, trace-cmd %d: %s", len(g), len(k), firstDiff(g, k))
	}
	return nil
}

// eventLines returns the event lines of a report, without timestamps and
// flags.
func eventLines(report string) []string {
	var out []string
	for _, line := range strings.Split(report, "\n") {
		if m := eventRE.FindStringSubmatch(line); m != nil {
			out = append(out, fmt.Sprintf("%s [%s] %s: %s", m[1], m[2], m[3], m[4]))
		}
	}
	return out
}
