package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// nobody is the unprivileged user of the file-creation tests.
const nobody = 65534

// sharedDir returns a new directory that nobody can write into too, of
// mode perm: 01777 is /tmp's shape, where the kernel's
// protected_symlinks and protected_regular may already stop some
// attacks; 0777 is one where they do not.
func sharedDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gtrace-shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asNobody runs the shell script in dir as nobody.
func asNobody(dir, script string, env ...string) error {
	c := exec.Command("sh", "-c", script)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("as nobody: %s: %w: %s", script, err, out)
	}
	return nil
}

// recordAs runs the test binary as gtrace record with args, as root,
// and returns its stderr and exit status; it fails the test if gtrace
// runs for a minute, which is far more than the /bin/true it traces
// needs even on a loaded machine.
func recordAs(t *testing.T, args ...string) (string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, self)
	c.Env = append(os.Environ(), workloadEnv+"=main record "+strings.Join(args, " "))
	var errb bytes.Buffer
	c.Stderr = &errb
	err = c.Run()
	if ctx.Err() != nil {
		t.Fatalf("gtrace record %s: still running after a minute, killed; stderr:\n%s", strings.Join(args, " "), errb.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return errb.String(), 0
}

// owners returns "name uid mode" for each file in dir.
func owners(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		uid := fi.Sys().(*syscall.Stat_t).Uid
		out = append(out, e.Name()+" "+strconv.FormatUint(uint64(uid), 10)+" "+fi.Mode().String())
	}
	return out
}

// TestPrivilegedRecordPlantedFiles plants, as nobody, in a directory
// both can write, what would turn root's recording against root: a
// symbolic link to a file of root at the output file or at a spool file,
// and an output or spool file of its own, created before root records
// (keeping its access to root's kernel addresses). The real gtrace
// record refuses each one with exit 1 and a message that names the file
// and says what to do; the link's target is untouched, and root leaves
// nothing in the directory.
func TestPrivilegedRecordPlantedFiles(t *testing.T) {
	testutil.RequirePrivileged(t)
	secret := filepath.Join(t.TempDir(), "secret")
	const secretText = "root's secret\n"
	if err := os.WriteFile(secret, []byte(secretText), 0o600); err != nil {
		t.Fatal(err)
	}
	plants := []struct {
		name, script, bad, kind string
	}{
		{"symlink", `ln -s "$SECRET" trace.dat`, "trace.dat", "a symbolic link"},
		{"spool-symlink", `ln -s "$SECRET" trace.dat.cpu0`, "trace.dat.cpu0", "a symbolic link"},
		{"precreated", `umask 0; echo mine > trace.dat`, "trace.dat", "a file owned by another user (uid 65534)"},
		{"precreated-spool", `umask 0; echo mine > trace.dat.cpu0`, "trace.dat.cpu0", "a file owned by another user (uid 65534)"},
		{"fifo", `mkfifo -m 666 trace.dat`, "trace.dat", "a named pipe"},
	}
	dirs := []struct {
		name string
		perm os.FileMode
	}{{"sticky", os.ModeSticky | 0o777}, {"open", 0o777}}
	for _, d := range dirs {
		for _, p := range plants {
			t.Run(p.name+"/"+d.name, func(t *testing.T) {
				dir := sharedDir(t, d.perm)
				if err := asNobody(dir, p.script, "SECRET="+secret); err != nil {
					t.Fatal(err)
				}
				before := owners(t, dir)
				out := filepath.Join(dir, "trace.dat")
				errOut, code := recordAs(t, "-e", "sched:sched_process_exit", "-o", out, "--", "/bin/true")
				want := "gtrace: create " + filepath.Join(dir, p.bad) + ": refusing to replace " + p.kind + " (remove it or choose another output file)\n"
				if code != exitFailure || errOut != want {
					t.Errorf("gtrace record: exit %d, stderr\n %q\nwant exit 1 and\n %q", code, errOut, want)
				}
				if after := owners(t, dir); !slices.Equal(after, before) {
					t.Errorf("directory after gtrace record:\n %v\nwant it as nobody left it:\n %v", after, before)
				}
				if b, err := os.ReadFile(secret); err != nil || string(b) != secretText {
					t.Errorf("root's file now holds %d bytes (%.40q...), %v", len(b), b, err)
				}
				if st, err := os.Stat(secret); err != nil || st.Mode() != 0o600 {
					t.Errorf("root's file: %v, %v; want mode 0600", st.Mode(), err)
				}
			})
		}
		// Without plants, root's recording is root's alone.
		t.Run("clean/"+d.name, func(t *testing.T) {
			dir := sharedDir(t, d.perm)
			out := filepath.Join(dir, "trace.dat")
			// An older recording of root, readable by all, is replaced.
			if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if errOut, code := recordAs(t, "-e", "sched:sched_process_exit", "-o", out, "--", "/bin/true"); code != 0 {
				t.Fatalf("gtrace record: exit %d, stderr:\n%s", code, errOut)
			}
			if got := owners(t, dir); !slices.Equal(got, []string{"trace.dat 0 -rw-------"}) {
				t.Errorf("directory after gtrace record: %v, want only trace.dat of root, mode 0600", got)
			}
			if err := asNobody(dir, `cat trace.dat >/dev/null`); err == nil {
				t.Errorf("nobody can read root's recording")
			}
		})
	}
}
