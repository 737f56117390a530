// Package testutil holds helpers shared by gtrace's tests.
package testutil

import (
	"os"
	"strings"
	"testing"
)

// RequirePrivileged skips a live test (BPF, tracefs) when not running as
// root, unless GTRACE_REQUIRE_BPF=1, which turns the skip into a failure.
// Live tests must be named TestPrivileged*, live benchmarks
// BenchmarkPrivileged*.
func RequirePrivileged(tb testing.TB) {
	tb.Helper()
	if !strings.HasPrefix(tb.Name(), "TestPrivileged") && !strings.HasPrefix(tb.Name(), "BenchmarkPrivileged") {
		tb.Fatalf("%s: privileged tests must be named TestPrivileged* (benchmarks BenchmarkPrivileged*)", tb.Name())
	}
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("GTRACE_REQUIRE_BPF") == "1" {
		tb.Fatalf("GTRACE_REQUIRE_BPF=1 but euid=%d: live tests cannot run", os.Geteuid())
	}
	tb.Skip("needs root, tracefs and BPF (run as root, e.g. go test -exec sudo)")
}
