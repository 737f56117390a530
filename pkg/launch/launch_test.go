package launch

import (
	"bytes"
	"os"
	"testing"
	"time"
)

func TestHeldCommandRunsOnlyAfterRelease(t *testing.T) {
	dir := t.TempDir()
	mark := dir + "/ran"
	var out bytes.Buffer
	h, err := Start([]string{"sh", "-c", "echo hi; touch " + mark + "; exit 3"}, nil, &out, &out)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("held command ran before Release")
	}
	done := h.Done()
	if err := h.Release(); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if got := <-done; got != 3 {
		t.Errorf("exit status = %d, want 3", got)
	}
	if out.String() != "hi\n" {
		t.Errorf("output = %q, want %q", out.String(), "hi\n")
	}
}

func TestSignalledCommandStatus(t *testing.T) {
	h, err := Start([]string{"sh", "-c", "kill -TERM $$"}, nil, nil, nil)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	done := h.Done()
	if err := h.Release(); err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if got := <-done; got != 128+15 {
		t.Errorf("exit status = %d, want 143", got)
	}
}

func TestStartUnknownCommand(t *testing.T) {
	if _, err := Start([]string{"gtrace-no-such-command"}, nil, nil, nil); err == nil {
		t.Fatal("Start(unknown) = nil error")
	}
}
