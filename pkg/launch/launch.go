// Package launch starts the command given after "--" held at its first
// instruction, so that probes can be attached before it runs, then lets it
// go and reports its exit status the way a shell does.
package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Held is a started command stopped right after its execve.
type Held struct {
	cmd      *exec.Cmd
	released bool
}

// Start starts argv stopped right after exec: the process exists (its pid
// is known, its comm is the program's) but has run none of its code. The
// caller must call Release or Kill from the same goroutine, which stays
// locked to its OS thread until then (ptrace requires it).
func Start(argv []string, stdin io.Reader, stdout, stderr io.Writer) (*Held, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to run")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	runtime.LockOSThread()
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("run %s: %w", argv[0], err)
	}
	var ws syscall.WaitStatus
	pid := cmd.Process.Pid
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		_ = cmd.Process.Kill()
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("run %s: the command did not stop after exec (%v)", argv[0], err)
	}
	return &Held{cmd: cmd}, nil
}

// Pid returns the command's process id.
func (h *Held) Pid() int { return h.cmd.Process.Pid }

// Release lets the command run.
func (h *Held) Release() error {
	defer runtime.UnlockOSThread()
	h.released = true
	if err := syscall.PtraceDetach(h.Pid()); err != nil {
		return fmt.Errorf("release %s: %w", h.cmd.Args[0], err)
	}
	return nil
}

// Kill ends a command that is still held (when attaching failed).
func (h *Held) Kill() {
	if !h.released {
		defer runtime.UnlockOSThread()
	}
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// Done returns a channel that receives the command's exit status when it
// exits: its code, or 128+signal when a signal killed it.
func (h *Held) Done() <-chan int {
	ch := make(chan int, 1)
	go func() {
		err := h.cmd.Wait()
		ch <- ExitStatus(h.cmd.ProcessState, err)
	}()
	return ch
}

// ExitStatus turns a process state into a shell-style exit status.
func ExitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 127
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
