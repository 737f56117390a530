package report

import (
	"context"
	"io"
	"os"
	"testing"
)

// BenchmarkText prints the captured files; it reports records per second.
func BenchmarkText(b *testing.B) {
	path := os.Getenv("GTRACE_BENCH_DAT")
	if path == "" {
		path = "testdata/captured/all2.dat"
	}
	f := openDat(b, path)
	n := 0
	it := f.Records()
	for it.Next() {
		n++
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Text(context.Background(), io.Discard, f, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
