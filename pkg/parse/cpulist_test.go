package parse

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCPUList(t *testing.T) {
	tests := []struct {
		src  string
		want []int
	}{
		{"0", []int{0}},
		{"0,2-3", []int{0, 2, 3}},
		{"3,1-2,2", []int{1, 2, 3}},
		{"5-9,0-6,8", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"7-7", []int{7}},
		{"007", []int{7}},
		{"65535", []int{65535}},
		{"8192", []int{8192}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := CPUList("--cpu", tt.src)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CPUList(%q) = %v, %v, want %v", tt.src, got, err, tt.want)
			}
		})
	}
}

func TestCPUListErrors(t *testing.T) {
	tests := []struct {
		src, caret string
	}{
		{"", "--cpu:1:1: empty CPU list\n  \n  ^\n  hint: write CPUs as a list such as 0,2-3"},
		{"0,x", "--cpu:1:3: invalid CPU list item \"x\"\n  0,x\n    ^\n" +
			"  hint: \"x\" is not a CPU number or range; write CPUs as a list such as 0,2-3"},
		{"0,3-1", "--cpu:1:3: invalid CPU list item \"3-1\"\n  0,3-1\n    ^~~\n" +
			"  hint: range \"3-1\" is backwards; write CPUs as a list such as 0,2-3"},
		{"1,,2", "--cpu:1:3: invalid CPU list item \"\"\n  1,,2\n    ^\n" +
			"  hint: \"\" is not a CPU number or range; write CPUs as a list such as 0,2-3"},
		{"65536", "--cpu:1:1: invalid CPU list item \"65536\"\n  65536\n  ^~~~~\n" +
			"  hint: \"65536\" is not a CPU number or range; write CPUs as a list such as 0,2-3"},
		{"-1", "--cpu:1:1: invalid CPU list item \"-1\""},
		{"+1", "--cpu:1:1: invalid CPU list item \"+1\""},
		{"1 ", "--cpu:1:1: invalid CPU list item \"1 \""},
		{"2-", "--cpu:1:1: invalid CPU list item \"2-\""},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := CPUList("--cpu", tt.src)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("CPUList(%q) = %v, %v, want a *Error", tt.src, got, err)
			}
			if c := pe.Caret(); !strings.HasPrefix(c, tt.caret) {
				t.Errorf("CPUList(%q) error:\n%s\nwant\n%s", tt.src, c, tt.caret)
			}
		})
	}
}

// FuzzCPUList: no panic; CPUs or an *Error inside the input, never both;
// CPUs sorted, each once, below MaxListCPU.
func FuzzCPUList(f *testing.F) {
	for _, s := range []string{"", "0", "0,2-3", "1-0", "x", "0,,1", "3-", "-1", "65536", "0-65535"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := CPUList("--cpu", s)
		if err != nil {
			var pe *Error
			if cpus != nil || !errors.As(err, &pe) || pe.Off < 0 || pe.End > len(s) || pe.Off > pe.End {
				t.Fatalf("CPUList(%q) = %v, %v: want only a *Error inside the input", s, cpus, err)
			}
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("CPUList(%q) = no CPUs and no error", s)
		}
		for i, c := range cpus {
			if c < 0 || c >= MaxListCPU || i > 0 && c <= cpus[i-1] {
				t.Fatalf("CPUList(%q) = %v: not sorted, unique and below %d", s, cpus, MaxListCPU)
			}
		}
	})
}
