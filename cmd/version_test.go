package cmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	vcs := func(main string, settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/gtrace/gtrace", Version: main}}
		for i := 0; i+1 < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	const rev = "abc123def4567890abc123def4567890abc123de"
	tests := []struct {
		name              string
		ver, commit, date string
		info              *debug.BuildInfo
		want              string
	}{
		{"no build info", "dev", "", "", nil, "dev"},
		{"go test", "dev", "", "", vcs(""), "dev"},
		{"no VCS", "dev", "", "", vcs("(devel)"), "dev"},
		{"go install @tag", "dev", "", "", vcs("v1.2.3"), "v1.2.3"},
		{"clean checkout", "dev", "", "", vcs("v0.0.0-20261125100000-abc123def456",
			"vcs", "git", "vcs.revision", rev, "vcs.time", "2026-11-25T10:00:00Z", "vcs.modified", "false"),
			"v0.0.0-20261125100000-abc123def456 (commit abc123def456, 2026-11-25T10:00:00Z)"},
		{"modified checkout", "dev", "", "", vcs("v0.0.0-20261125100000-abc123def456+dirty",
			"vcs.revision", rev, "vcs.time", "2026-11-25T10:00:00Z", "vcs.modified", "true"),
			"v0.0.0-20261125100000-abc123def456+dirty (commit abc123def456, 2026-11-25T10:00:00Z, modified)"},
		{"-X version wins", "1.2.3", "", "", vcs("v0.0.0-20261125100000-abc123def456",
			"vcs.revision", rev, "vcs.time", "2026-11-25T10:00:00Z"),
			"1.2.3 (commit abc123def456, 2026-11-25T10:00:00Z)"},
		{"-X all three", "1.2.3", "0123456789abcdef", "2026-12-01T00:00:00Z", vcs("(devel)",
			"vcs.revision", rev, "vcs.time", "2026-11-25T10:00:00Z"),
			"1.2.3 (commit 0123456789ab, 2026-12-01T00:00:00Z)"},
		{"short commit", "dev", "abc", "", nil, "dev (commit abc)"},
		{"empty -X version", "", "", "", vcs("(devel)"), "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.ver, tt.commit, tt.date, tt.info); got != tt.want {
				t.Errorf("formatVersion(%q, %q, %q, %+v) = %q, want %q", tt.ver, tt.commit, tt.date, tt.info, got, tt.want)
			}
		})
	}
}

// TestVersionCommand: gtrace version prints what gtrace --version prints.
func TestVersionCommand(t *testing.T) {
	want, errOut, code := runWithStdin(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(want, "gtrace version ") || errOut != "" {
		t.Fatalf("gtrace --version: exit %d, stdout %q, stderr %q", code, want, errOut)
	}
	got, errOut, code := runWithStdin(t, nil, "version")
	if code != 0 || got != want || errOut != "" {
		t.Errorf("gtrace version: exit %d, stdout %q, stderr %q; want %q", code, got, errOut, want)
	}
	if _, errOut, code := runWithStdin(t, nil, "version", "x"); code != exitUsage {
		t.Errorf("gtrace version x: exit %d, stderr %q; want 2", code, errOut)
	}
}
