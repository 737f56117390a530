package cmd

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// newVersionCmd is gtrace version, which prints what gtrace --version
// prints.
func newVersionCmd(d *Deps) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print gtrace's version, as --version does",
		Example: `  gtrace version`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(d.Out, "gtrace version %s\n", versionText())
			return err
		},
	}
}

// commit and date, like version, may be set at build time, as goreleaser
// does: -ldflags "-X github.com/gtrace/gtrace/cmd.commit=... -X
// github.com/gtrace/gtrace/cmd.date=...". Left empty, they come from the
// build info that go build stamps from the VCS.
var (
	commit string
	date   string
)

// versionText returns what gtrace --version prints after "gtrace version ":
// the version, then the commit, its time and "modified" when they are
// known, e.g. "v0.0.0-20261125100000-abc123def456+dirty (commit
// abc123def456, 2026-11-25T10:00:00Z, modified)".
func versionText() string {
	info, _ := debug.ReadBuildInfo()
	return formatVersion(version, commit, date, info)
}

// formatVersion builds versionText from the values set with -ldflags -X
// (ver "dev" and empty commit and date when not set), which win, and the
// build info (nil if none): the main module's version (a tag, or a
// pseudo-version from the VCS; "(devel)" when go build knew none) and the
// settings vcs.revision, vcs.time and vcs.modified.
func formatVersion(ver, commit, date string, info *debug.BuildInfo) string {
	modified := false
	if info != nil {
		if v := info.Main.Version; (ver == "" || ver == "dev") && v != "" && v != "(devel)" {
			ver = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				if date == "" {
					date = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if ver == "" {
		ver = "dev"
	}
	var more []string
	if commit != "" {
		more = append(more, "commit "+commit[:min(len(commit), 12)])
	}
	if date != "" {
		more = append(more, date)
	}
	if modified {
		more = append(more, "modified")
	}
	if len(more) == 0 {
		return ver
	}
	return ver + " (" + strings.Join(more, ", ") + ")"
}
