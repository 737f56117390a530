package syscalls

import (
	"slices"
	"testing"
)

func TestNameAmd64(t *testing.T) {
	// grammar.md §11 and arch/x86/entry/syscalls/syscall_64.tbl.
	tests := []struct {
		nr   uint64
		want string
	}{
		{0, "sys_read"},
		{1, "sys_write"},
		{3, "sys_close"},
		{5, "sys_newfstat"},
		{16, "sys_ioctl"},
		{39, "sys_getpid"},
		{40, "sys_sendfile64"},
		{63, "sys_newuname"},
		{110, "sys_getppid"},
		{128, "sys_rt_sigtimedwait"},
		{166, "sys_umount"},
		{230, "sys_clock_nanosleep"},
		{231, "sys_exit_group"},
		{257, "sys_openat"},
		{262, "sys_newfstatat"},
		{424, "sys_pidfd_send_signal"},
	}
	for _, tt := range tests {
		if got, ok := Name("amd64", tt.nr); !ok || got != tt.want {
			t.Errorf("Name(amd64, %d) = %q, %v, want %q, true", tt.nr, got, ok, tt.want)
		}
	}
}

func TestNameOtherArches(t *testing.T) {
	tests := []struct {
		arch string
		nr   uint64
		want string
	}{
		{"386", 3, "sys_read"},
		{"arm", 3, "sys_read"},
		{"arm64", 63, "sys_read"},
		{"arm64", 64, "sys_write"},
		{"arm64", 80, "sys_newfstat"},
		{"arm64", 173, "sys_getppid"},
		{"arm64", 223, "sys_fadvise64_64"},
		{"riscv64", 56, "sys_openat"},
		{"riscv64", 258, "sys_riscv_hwprobe"},
		{"loong64", 93, "sys_exit"},
		{"mips", 4003, "sys_read"},
		{"mipsle", 4003, "sys_read"},
		{"mips64", 5000, "sys_read"},
		{"ppc64le", 3, "sys_read"},
		{"ppc", 256, "sys_debug_setcontext"},
		{"s390x", 3, "sys_read"},
		{"sparc64", 3, "sys_read"},
	}
	for _, tt := range tests {
		if got, ok := Name(tt.arch, tt.nr); !ok || got != tt.want {
			t.Errorf("Name(%s, %d) = %q, %v, want %q, true", tt.arch, tt.nr, got, ok, tt.want)
		}
	}
}

func TestNameUnknown(t *testing.T) {
	tests := []struct {
		arch string
		nr   uint64
	}{
		{"amd64", 400}, // gap between uprobe (336) and pidfd_send_signal (424)
		{"amd64", 1 << 40},
		{"amd64", 183}, // afs_syscall: no entry point
		{"amd64", 212}, // lookup_dcookie: removed
		{"arm64", 18},  // lookup_dcookie: sys_ni_syscall
		{"arm64", 244}, // first arch-specific number, not a syscall
		{"arm", 0x0fffff},
		{"mips", 3}, // below the o32 base of 4000
		{"vax", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got, ok := Name(tt.arch, tt.nr); ok {
			t.Errorf("Name(%q, %d) = %q, true, want false", tt.arch, tt.nr, got)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		arch, name string
		want       uint64
	}{
		{"amd64", "read", 0},
		{"amd64", "sys_read", 0},
		{"amd64", "SYS_READ", 0},
		{"amd64", "write", 1},
		{"amd64", "close", 3},
		{"amd64", "getpid", 39},
		{"amd64", "sys_getppid", 110},
		{"amd64", "rt_sigtimedwait", 128},
		{"amd64", "clock_nanosleep", 230},
		{"amd64", "exit_group", 231},
		{"amd64", "openat", 257},
		{"amd64", "fstat", 5},
		{"amd64", "sys_fstat", 5},
		{"amd64", "sys_newfstat", 5},
		{"amd64", "newfstat", 5},
		{"amd64", "umount2", 166},
		{"amd64", "sys_umount", 166},
		{"amd64", "afs_syscall", 183},
		{"arm64", "openat", 56},
		{"arm64", "sys_newuname", 160},
		{"mips", "read", 4003},
		{"ppc", "sys_debug_setcontext", 256},
		{"ppc", "debug_setcontext", 256},
	}
	for _, tt := range tests {
		if got, ok := Number(tt.arch, tt.name); !ok || got != tt.want {
			t.Errorf("Number(%s, %q) = %d, %v, want %d, true", tt.arch, tt.name, got, ok, tt.want)
		}
	}
	for _, name := range []string{"", "sys_", "nosuchcall", "sys_nosuchcall"} {
		if got, ok := Number("amd64", name); ok {
			t.Errorf("Number(amd64, %q) = %d, true, want false", name, got)
		}
	}
	if got, ok := Number("vax", "read"); ok {
		t.Errorf("Number(vax, read) = %d, true, want false", got)
	}
}

// TestRoundTrip checks that Number inverts Name on every architecture.
func TestRoundTrip(t *testing.T) {
	for _, arch := range Arches() {
		n := 0
		for nr := range uint64(6000) {
			name, ok := Name(arch, nr)
			if !ok {
				continue
			}
			n++
			if got, ok := Number(arch, name); !ok || got != nr {
				t.Errorf("Number(%s, Name(%s, %d) = %q) = %d, %v", arch, arch, nr, name, got, ok)
			}
		}
		if n < 250 {
			t.Errorf("%s: only %d syscalls have names", arch, n)
		}
	}
}

func TestArches(t *testing.T) {
	got := Arches()
	for _, want := range []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le", "ppc64", "ppc64le", "riscv64", "s390x"} {
		if !slices.Contains(got, want) {
			t.Errorf("Arches() = %v, want it to contain %s", got, want)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("Arches() = %v, want sorted", got)
	}
}

func TestArchFromMachine(t *testing.T) {
	tests := []struct{ machine, want string }{
		{"x86_64", "amd64"},
		{"aarch64", "arm64"},
		{"i686", "386"},
		{"i386", "386"},
		{"armv7l", "arm"},
		{"armv6l", "arm"},
		{"riscv64", "riscv64"},
		{"ppc64le", "ppc64le"},
		{"ppc64", "ppc64"},
		{"s390x", "s390x"},
		{"mips", "mips"},
		{"mips64", "mips64"},
		{"loongarch64", "loong64"},
		{"sparc64", "sparc64"},
		{"alpha", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := ArchFromMachine(tt.machine); got != tt.want {
			t.Errorf("ArchFromMachine(%q) = %q, want %q", tt.machine, got, tt.want)
		}
		if tt.want != "" && !slices.Contains(Arches(), tt.want) {
			t.Errorf("ArchFromMachine(%q) = %q, which Name does not know", tt.machine, tt.want)
		}
	}
}

// TestEventNumber maps syscalls events to the numbers of their system
// calls through the kernel's entry point names.
func TestEventNumber(t *testing.T) {
	tests := []struct {
		system, name string
		nr           uint32
		ok           bool
	}{
		{"syscalls", "sys_enter_read", 0, true},
		{"syscalls", "sys_enter_openat", 257, true},
		{"syscalls", "sys_exit_newfstatat", 262, true},
		{"syscalls", "sys_enter_umount", 166, true},
		{"syscalls", "sys_exit_getppid", 110, true},
		{"syscalls", "sys_enter_umount2", 0, false}, // the uapi name, not the entry point's
		{"syscalls", "sys_enter_fstatat", 0, false},
		{"syscalls", "sys_enter_no_such_call", 0, false},
		{"syscalls", "sys_enter", 0, false},
		{"raw_syscalls", "sys_enter", 0, false},
		{"sched", "sys_enter_openat", 0, false},
	}
	for _, tc := range tests {
		nr, ok := EventNumber("amd64", tc.system, tc.name)
		if nr != tc.nr || ok != tc.ok {
			t.Errorf("EventNumber(amd64, %s, %s) = %d, %v, want %d, %v", tc.system, tc.name, nr, ok, tc.nr, tc.ok)
		}
	}
	if nr, ok := EventNumber("arm64", "syscalls", "sys_enter_openat"); !ok || nr != 56 {
		t.Errorf("EventNumber(arm64, openat) = %d, %v, want 56", nr, ok)
	}
	if _, ok := EventNumber("no_such_arch", "syscalls", "sys_enter_openat"); ok {
		t.Error("an unknown architecture has numbers")
	}
}
