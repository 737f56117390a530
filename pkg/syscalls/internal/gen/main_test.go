package main

import (
	"bytes"
	"os"
	"testing"
)

// TestUpToDate checks that the committed zsyscalls.go is what the generator
// writes for the x/sys version in go.mod.
func TestUpToDate(t *testing.T) {
	m, err := findModule()
	if err != nil {
		t.Skipf("x/sys source not available: %v", err)
	}
	if _, err := os.Stat(m.Dir); err != nil {
		t.Skipf("x/sys source not available: %v", err)
	}
	want, err := generate(m)
	if err != nil {
		t.Fatalf("generate() = %v", err)
	}
	got, err := os.ReadFile("../../zsyscalls.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("zsyscalls.go is out of date: run go generate ./pkg/syscalls")
	}
}
