package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// holdEnv marks a gtrace process started by Hold.
const holdEnv = "GTRACE_HOLD_FILES"

// held keeps the write end of each holder's pipe open until this process
// exits: the holder reads its standard input until then.
var held []*os.File

// Hold starts a copy of this program that holds the given open files
// until this process has exited, and then exits itself, closing them.
// Whatever the kernel does when the last reference to one of them goes
// (detaching a BPF link from a tracepoint waits for an RCU grace period,
// ~30 ms each, one after the other) then happens in that process, after
// gtrace is back at the shell. The caller still closes its own copies;
// that only drops references. The files' descriptors are duplicated for
// the holder and the duplicates closed here once it has started.
func Hold(fds []int) error {
	if len(fds) == 0 {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("hold files: %w", err)
	}
	files := make([]*os.File, 0, len(fds))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, fd := range fds {
		d, err := syscall.Dup(fd)
		if err != nil {
			return fmt.Errorf("hold files: %w", err)
		}
		files = append(files, os.NewFile(uintptr(d), "held"))
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("hold files: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), holdEnv+"=1")
	cmd.Stdin = r
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("hold files: %w", err)
	}
	held = append(held, w)
	return nil
}

// Holding reports whether this process was started by Hold: it should
// call HoldUntilParentExits and do nothing else.
func Holding() bool { return os.Getenv(holdEnv) == "1" }

// HoldUntilParentExits waits until the process that started this one
// has exited (its end of standard input closes), and returns; the caller
// then exits, and the files it inherited are closed.
func HoldUntilParentExits() error {
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
