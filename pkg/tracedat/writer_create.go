package tracedat

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"syscall"
)

// ErrNotReplaceable is wrapped by the errors of Create (and of Recover)
// for a file that gtrace will not write into: one that is not a regular
// file (a symbolic link, a named pipe, a device, a directory, ...) or
// one that another user owns.
var ErrNotReplaceable = errors.New("refusing to replace")

// createFile creates the file name for reading and writing. It is the
// one way the writer creates files, so that none can be turned against
// a recorder running as root:
//
//   - the file is new: it is created with O_EXCL, which never follows a
//     symbolic link, with mode 0600 whatever the umask;
//   - an existing regular file of the running user (the effective uid),
//     checked with fstat on a descriptor opened with O_NOFOLLOW, is
//     unlinked first, so a hard link to it elsewhere keeps its content;
//   - anything else at name, a symbolic link, a named pipe, a device, a
//     directory or another user's file, is refused with an error
//     wrapping ErrNotReplaceable and left as it is.
//
// If something appears at name between the unlink and the creation,
// createFile fails: it never writes into what it did not create.
func createFile(name string) (*os.File, error) {
	if err := checkReplaceable(name); err != nil {
		return nil, err
	}
	// Unlink, never rmdir: a directory that appeared meanwhile stays.
	if err := syscall.Unlink(name); err != nil && !errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("create %s: remove the old file: %w", name, err)
	}
	return createExclusive(name)
}

// checkReplaceable returns nil if name does not exist or is a regular
// file of the running user, which createFile may replace, and otherwise
// the error createFile returns.
func checkReplaceable(name string) error {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fileError("create", name, err)
	}
	if err := unsafeFile(fi); err != nil {
		return refused(name, err)
	}
	// What the name showed may have changed: look at the file itself.
	f, err := openNoFollow(name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return refused(name, err)
	}
	f.Close()
	return nil
}

// refused returns createFile's error for a file it will not replace,
// with what to do about it.
func refused(name string, err error) error {
	if !errors.Is(err, ErrNotReplaceable) {
		return fileError("create", name, err)
	}
	return fmt.Errorf("create %s: %w (remove it or choose another output file)", name, err)
}

// createExclusive creates name, which must not exist, with mode 0600.
func createExclusive(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fileError("create", name, err)
	}
	// The umask may have taken bits away from 0600.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fileError("create", name, err)
	}
	return f, nil
}

// createTemp creates a new file beside path, named path.N.tmp, with
// createExclusive.
func createTemp(path string) (*os.File, error) {
	for range 100 {
		f, err := createExclusive(path + "." + strconv.FormatUint(uint64(rand.Uint32()), 10) + ".tmp")
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("create a file beside %s: %w", path, fs.ErrExist)
}

// openNoFollow opens name, which must be a regular file of the running
// user: a symbolic link at name, another type of file or another user's
// file is an error wrapping ErrNotReplaceable. It does not block on a
// named pipe.
func openNoFollow(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w a symbolic link", ErrNotReplaceable)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = unsafeFile(fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// unsafeFile returns why gtrace must not write into the file fi
// describes, wrapping ErrNotReplaceable; nil for a regular file of the
// running user.
func unsafeFile(fi fs.FileInfo) error {
	m := fi.Mode()
	if !m.IsRegular() {
		return fmt.Errorf("%w %s", ErrNotReplaceable, fileKind(m))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w a file owned by another user (uid %d)", ErrNotReplaceable, st.Uid)
	}
	return nil
}

// fileKind names the type of a file that is not a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// fileError returns "op name: cause", without the name an *fs.PathError
// would repeat.
func fileError(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", op, name, err)
}
