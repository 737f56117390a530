package tracedat

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
)

// wrSecret is the content of a file that Create must not touch.
const wrSecret = "secret kernel addresses\n"

// wrPlant writes a file that Create must leave alone and returns a
// check that it did: same content and mode.
func wrPlant(t *testing.T, path string) func() {
	t.Helper()
	if err := os.WriteFile(path, []byte(wrSecret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil || string(b) != wrSecret {
			t.Errorf("%s: %q, %v; want it untouched", filepath.Base(path), b, err)
		}
		if st, err := os.Lstat(path); err != nil || st.Mode() != 0o644 {
			t.Errorf("%s: mode %v, %v; want it untouched", filepath.Base(path), st.Mode(), err)
		}
	}
}

// wrNames returns the names in dir, sorted.
func wrNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// wrCheckRefused checks Create's error for the file bad: it wraps
// ErrNotReplaceable, names bad once (and no other file of the
// recording), says what to do and what bad is.
func wrCheckRefused(t *testing.T, err error, bad, kind string) {
	t.Helper()
	if !errors.Is(err, ErrNotReplaceable) {
		t.Fatalf("Create() = %v, want ErrNotReplaceable", err)
	}
	msg := err.Error()
	want := "create " + bad + ": refusing to replace " + kind + " (remove it or choose another output file)"
	if msg != want {
		t.Errorf("Create() error\n %q\nwant\n %q", msg, want)
	}
}

// TestCreateRefusesSymlinks plants a symbolic link at the output file and
// at a spool file, to a file and to a name that does not exist yet:
// Create refuses, the link and its target stay as they were, an older
// recording at the output is kept and nothing is left behind.
func TestCreateRefusesSymlinks(t *testing.T) {
	m := wrMeta(t, 2)
	for _, at := range []string{"trace.dat", "trace.dat.cpu0", "trace.dat.cpu1"} {
		for _, dangling := range []bool{false, true} {
			name := at
			if dangling {
				name += "/dangling"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "trace.dat")
				target := filepath.Join(dir, "target")
				var check func()
				if dangling {
					check = func() {
						if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
							t.Errorf("the link's target was created: %v", err)
						}
					}
				} else {
					check = wrPlant(t, target)
				}
				if at != "trace.dat" {
					check = combine(check, wrPlant(t, path)) // an older recording
				}
				if err := os.Symlink(target, filepath.Join(dir, at)); err != nil {
					t.Fatal(err)
				}
				before := wrNames(t, dir)
				w, err := Create(path, m, WriteOptions{})
				if err == nil {
					w.Abort()
				}
				wrCheckRefused(t, err, filepath.Join(dir, at), "a symbolic link")
				check()
				if got := wrNames(t, dir); !slices.Equal(got, before) {
					t.Errorf("files after Create: %v, want %v", got, before)
				}
				if l, err := os.Readlink(filepath.Join(dir, at)); err != nil || l != target {
					t.Errorf("the link is now %q, %v", l, err)
				}
			})
		}
	}
}

// combine returns a check that runs checks.
func combine(checks ...func()) func() {
	return func() {
		for _, c := range checks {
			c()
		}
	}
}

// TestCreateRefusesSpecialFiles puts a named pipe, a socket and a
// directory at the output file or a spool file: Create refuses them at
// once, without opening the pipe (which would block with no writer).
func TestCreateRefusesSpecialFiles(t *testing.T) {
	m := wrMeta(t, 2)
	kinds := []struct {
		kind string
		make func(string) error
	}{
		{"a named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"a socket", func(p string) error {
			l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
			if err == nil {
				l.SetUnlinkOnClose(false)
				l.Close()
			}
			return err
		}},
	}
	for _, k := range kinds {
		for _, at := range []string{"trace.dat", "trace.dat.cpu1"} {
			t.Run(strings.Fields(k.kind)[1]+"/"+at, func(t *testing.T) {
				// A socket's path must fit in 108 bytes.
				dir, err := os.MkdirTemp("", "gt")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				path := filepath.Join(dir, "trace.dat")
				bad := filepath.Join(dir, at)
				if err := k.make(bad); err != nil {
					t.Fatal(err)
				}
				before := wrNames(t, dir)
				done := make(chan error, 1)
				go func() {
					w, err := Create(path, m, WriteOptions{})
					if err == nil {
						w.Abort()
					}
					done <- err
				}()
				select {
				case err := <-done:
					wrCheckRefused(t, err, bad, k.kind)
				case <-time.After(30 * time.Second):
					// Unblock the open, if that is where it hangs.
					if f, err := os.OpenFile(bad, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
					t.Fatalf("Create() still running after 30 s")
				}
				if got := wrNames(t, dir); !slices.Equal(got, before) {
					t.Errorf("files after Create: %v, want %v", got, before)
				}
				if st, err := os.Lstat(bad); err != nil || st.Mode().IsRegular() {
					t.Errorf("%s replaced: %v, %v", at, st.Mode(), err)
				}
			})
		}
	}
}

// TestCreateReplacesOwnFile replaces an older file of the running user
// at every name: the new files are new (a hard link to the old one keeps
// its content), with mode 0600 whatever the umask and the old mode.
func TestCreateReplacesOwnFile(t *testing.T) {
	m := wrMeta(t, 2)
	for _, umask := range []int{0, 0o277} {
		t.Run(fs.FileMode(umask).String(), func(t *testing.T) {
			dir := t.TempDir() // before the umask takes the owner's w away
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			path := filepath.Join(dir, "trace.dat")
			var checks []func()
			for _, name := range []string{"trace.dat", "trace.dat.cpu0", "trace.dat.cpu1"} {
				keep := filepath.Join(dir, "keep-"+name)
				checks = append(checks, wrPlant(t, keep))
				if err := os.Link(keep, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Create(path, m, WriteOptions{})
			if err != nil {
				t.Fatalf("Create() = %v", err)
			}
			defer w.Abort()
			wrAdd(t, w, wrEvents(2, 100, 3))
			for _, p := range []string{path, path + ".cpu0", path + ".cpu1"} {
				wrCheckMode(t, p)
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			wrCheckMode(t, path)
			combine(checks...)()
			f, err := Open(path)
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			wrCheckRecords(t, wrReadAll(t, f), wrMerged(wrEvents(2, 100, 3)))
		})
	}
}

// TestCreateTempBesideV6 checks that a version 6 file, written beside
// the output and renamed over it, has mode 0600 under a umask that takes
// the owner's write bit away.
func TestCreateTempBesideV6(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o277)
	defer syscall.Umask(old)
	path := filepath.Join(dir, "trace.dat")
	wrWriteFile(t, path, wrMeta(t, 2), WriteOptions{Version: 6}, wrEvents(2, 50, 7))
	wrCheckMode(t, path)
	if got := wrNames(t, dir); !slices.Equal(got, []string{"trace.dat"}) {
		t.Errorf("files after Close: %v", got)
	}
}

// TestCreateErrorNamesFile checks that errors about a file name it once,
// and name the spool file when the spool file is the problem.
func TestCreateErrorNamesFile(t *testing.T) {
	m := wrMeta(t, 2)
	missing := filepath.Join(t.TempDir(), "missing", "trace.dat")
	_, err := Create(missing, m, WriteOptions{})
	if err == nil || err.Error() != "create "+missing+": no such file or directory" {
		t.Errorf("Create in a missing directory = %v", err)
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "trace.dat")
	w, err := Create(path, m, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	w.spools[1].Close() // the disk fails under CPU 1's spool
	wrAdd(t, w, wrEvents(2, 100, 3))
	err = w.Close()
	if err == nil || !strings.Contains(err.Error(), path+".cpu1: file already closed") {
		t.Errorf("Close() = %v, want an error naming trace.dat.cpu1", err)
	}
}

// TestRecoverRefusesLinks plants symbolic links in an interrupted
// recording: a spool file linked to a secret file is not read, and a
// recording reached through a link is not completed in place.
func TestRecoverRefusesLinks(t *testing.T) {
	m := wrMeta(t, 2)
	interrupted := func(t *testing.T, path string) {
		w, err := Create(path, m, WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, sf := range w.spools {
				sf.Close()
			}
			w.f.Close()
		})
		wrAdd(t, w, wrEvents(2, 2000, 5))
		for cpu := range 2 {
			if err := w.CPU(cpu).Flush(); err != nil {
				t.Fatal(err)
			}
		}
		// Not closed: killed.
	}

	t.Run("spool", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "trace.dat")
		interrupted(t, path)
		secret := filepath.Join(dir, "secret")
		data := strings.Repeat(wrSecret, 2*m.PageSize/len(wrSecret)+1)
		if err := os.WriteFile(secret, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path + ".cpu1"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, path+".cpu1"); err != nil {
			t.Fatal(err)
		}
		want := "spool file " + path + ".cpu1 is a symbolic link"
		if _, err := OpenSpooled(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenSpooled() = %v, want %q", err, want)
		}
		if err := Recover(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Recover() = %v, want %q", err, want)
		}
		if b, err := os.ReadFile(secret); err != nil || string(b) != data {
			t.Errorf("the secret file changed: %v", err)
		}
	})

	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		real := filepath.Join(dir, "real.dat")
		interrupted(t, real)
		path := filepath.Join(dir, "trace.dat")
		for _, suffix := range []string{"", ".cpu0", ".cpu1"} {
			if err := os.Symlink(real+suffix, path+suffix); err != nil {
				t.Fatal(err)
			}
		}
		st, err := os.Stat(real)
		if err != nil {
			t.Fatal(err)
		}
		if err := Recover(path); !errors.Is(err, ErrNotReplaceable) {
			t.Errorf("Recover(link) = %v, want ErrNotReplaceable", err)
		}
		if st2, err := os.Stat(real); err != nil || st2.Size() != st.Size() {
			t.Errorf("the link's target changed: %v", err)
		}
		if err := Recover(real); err != nil {
			t.Errorf("Recover(real) = %v", err)
		}
	})
}

// TestPrivilegedCreateOtherUsersFile gives the output file, then a spool
// file, to another user (nobody): Create refuses to replace it, and
// leaves it and its mode as they were, so that its owner gets no access
// to what root records.
func TestPrivilegedCreateOtherUsersFile(t *testing.T) {
	testutil.RequirePrivileged(t)
	m := wrMeta(t, 2)
	for _, at := range []string{"trace.dat", "trace.dat.cpu1"} {
		t.Run(at, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.dat")
			bad := filepath.Join(dir, at)
			check := wrPlant(t, bad)
			if err := os.Chown(bad, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			before := wrNames(t, dir)
			w, err := Create(path, m, WriteOptions{})
			if err == nil {
				w.Abort()
			}
			wrCheckRefused(t, err, bad, "a file owned by another user (uid 65534)")
			check()
			if got := wrNames(t, dir); !slices.Equal(got, before) {
				t.Errorf("files after Create: %v, want %v", got, before)
			}
		})
	}
}
