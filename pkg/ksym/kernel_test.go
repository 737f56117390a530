package ksym

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	tab, err := Load()
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		t.Skipf("Load() = %v", err)
	case errors.Is(err, ErrHidden):
		if !strings.Contains(err.Error(), "/proc/kallsyms") {
			t.Errorf("Load() = %v, want the path in the error", err)
		}
		return
	case err != nil:
		t.Fatalf("Load() = %v", err)
	}
	var stext uint64
	for _, s := range tab.syms {
		if s.Name == "_stext" && s.Module == "" {
			stext = s.Addr
		}
	}
	if stext == 0 {
		t.Fatalf("Load() = %d symbols, none of them _stext", len(tab.syms))
	}
	if got, ok := tab.Lookup(stext); !ok || got.Addr != stext {
		t.Errorf("Lookup(_stext = %#x) = %+v, %v", stext, got, ok)
	}
}
