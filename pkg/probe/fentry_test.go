package probe

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// TestFentryWordType: the argument types a trampoline saves in one word
// (and gtrace reads with bpf_get_func_arg), through typedefs and
// qualifiers; a struct passed by value is not one.
func TestFentryWordType(t *testing.T) {
	long := &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	for _, c := range []struct {
		name string
		t    btf.Type
		want bool
	}{
		{"long", long, true},
		{"int", &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}, true},
		{"loff_t", &btf.Typedef{Name: "loff_t", Type: long}, true},
		{"const long", &btf.Const{Type: long}, true},
		{"pointer", &btf.Pointer{Target: &btf.Struct{Name: "file"}}, true},
		{"enum", &btf.Enum{Name: "e", Size: 4}, true},
		{"__int128", &btf.Int{Name: "__int128", Size: 16, Encoding: btf.Signed}, false},
		{"struct", &btf.Struct{Name: "s", Size: 8}, false},
	} {
		if got := wordType(c.t); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFentryArgsNotInBTF: a function the kernel's BTF lacks stays on its
// kprobe, and the answer says why.
func TestFentryArgsNotInBTF(t *testing.T) {
	if !HaveKernelBTF() {
		t.Skip("no kernel BTF")
	}
	_, err := FentryArgs("gtrace_no_such_function", false)
	if err == nil || !strings.Contains(err.Error(), "gtrace_no_such_function is not a function of the kernel's BTF") {
		t.Errorf("got %v", err)
	}
}
