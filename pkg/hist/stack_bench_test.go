package hist

import (
	"bufio"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/ksym"
)

// stackBenchDepth is the frames of each stack of the symbolization
// benchmark: about a system call's kernel path from the tracepoint.
const stackBenchDepth = 12

// BenchmarkPrivilegedStackSymbolize measures how many unique kernel
// stacks a hist's text output symbolizes per second through this
// machine's /proc/kallsyms (its addresses need root): each of b.N
// iterations prints the frames of a stack not seen before, of
// stackBenchDepth return addresses inside random vmlinux text symbols,
// as a stack key prints them (%pS, one frame a line). The kallsyms
// table is parsed before the timer starts, as a session parses it once;
// its parse time is reported beside the rate.
func BenchmarkPrivilegedStackSymbolize(b *testing.B) {
	testutil.RequirePrivileged(b)
	text, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	syms, err := ksym.ParseText(string(text))
	if err != nil {
		b.Fatal(err)
	}
	parse := time.Since(t0)
	var funcs []uint64
	sc := bufio.NewScanner(strings.NewReader(string(text)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || (f[1] != "t" && f[1] != "T") {
			continue // module symbols and data
		}
		if addr, err := strconv.ParseUint(f[0], 16, 64); err == nil && addr != 0 {
			funcs = append(funcs, addr)
		}
	}
	if len(funcs) == 0 {
		b.Fatal("no vmlinux text symbol in /proc/kallsyms")
	}
	r := Resolver{Sym: syms.Sym, SymOffset: syms.SymOffset}
	rnd := rand.New(rand.NewPCG(1, 2))
	stacks := make([]*Stack, b.N)
	for i := range stacks {
		pcs := make([]uint64, stackBenchDepth)
		for j := range pcs {
			pcs[j] = funcs[rnd.IntN(len(funcs))] + 1 + rnd.Uint64N(16)
		}
		stacks[i] = NewStack(pcs)
	}
	var buf []byte
	b.ResetTimer()
	for _, s := range stacks {
		buf = appendStackText(buf[:0], s, r)
	}
	b.StopTimer()
	if !strings.Contains(string(buf), "+0x") {
		b.Fatalf("the last stack printed no symbol:\n%s", buf)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "stacks/s")
	b.ReportMetric(float64(len(funcs)), "text-syms")
	b.ReportMetric(float64(parse.Milliseconds()), "kallsyms-parse-ms")
}
