package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testtrace"
)

// TestCanceled: a canceled Text, JSON or NDJSON stops within checkEvery
// records, after a whole line, and returns the cause; JSON still ends
// its document.
func TestCanceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.dat")
	testtrace.RepeatTrace(t, sampleDat, path, 30)
	f := openDat(t, path)
	stop := errors.New("stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stop)
	for _, tc := range []struct {
		name string
		run  func(context.Context, *bytes.Buffer) error
	}{
		{"text", func(ctx context.Context, b *bytes.Buffer) error { return Text(ctx, b, f, Options{}) }},
		{"json", func(ctx context.Context, b *bytes.Buffer) error { return JSON(ctx, b, f, Options{}) }},
		{"ndjson", func(ctx context.Context, b *bytes.Buffer) error { return NDJSON(ctx, b, f, Options{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var full, cut bytes.Buffer
			if err := tc.run(context.Background(), &full); err != nil {
				t.Fatal(err)
			}
			err := tc.run(ctx, &cut)
			if !errors.Is(err, stop) {
				t.Errorf("%s with a canceled context = %v, want the cause", tc.name, err)
			}
			lines := strings.Count(cut.String(), "\n")
			if cut.Len() == 0 || cut.Bytes()[cut.Len()-1] != '\n' || lines > checkEvery+2 || lines >= strings.Count(full.String(), "\n") {
				t.Fatalf("%s with a canceled context printed %d lines (of %d), want up to %d whole lines",
					tc.name, lines, strings.Count(full.String(), "\n"), checkEvery+2)
			}
			if tc.name == "json" {
				var doc struct{ Events []json.RawMessage }
				if err := json.Unmarshal(cut.Bytes(), &doc); err != nil || len(doc.Events) == 0 {
					t.Errorf("json with a canceled context: %v, %d events", err, len(doc.Events))
				}
				return
			}
			if !bytes.HasPrefix(full.Bytes(), cut.Bytes()) {
				t.Errorf("%s with a canceled context is not a prefix of the whole output", tc.name)
			}
		})
	}
}
