package filtergen

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gtrace/gtrace/pkg/eval"
	"github.com/gtrace/gtrace/pkg/parse"
)

// testFormat has a field of every class a filter compares: numbers of
// each width, signed and not, a char array, a __data_loc string, a
// cpumask, and a char pointer and a number array, which filters cannot
// use here.
const testFormat = `name: gen_test
ID: 90
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char name[16];	offset:8;	size:16;	signed:0;
	field:signed char small;	offset:24;	size:1;	signed:1;
	field:unsigned char flag;	offset:25;	size:1;	signed:0;
	field:unsigned short port;	offset:26;	size:2;	signed:0;
	field:int delta;	offset:28;	size:4;	signed:1;
	field:long big;	offset:32;	size:8;	signed:1;
	field:unsigned long addr;	offset:40;	size:8;	signed:0;
	field:__data_loc char[] path;	offset:48;	size:4;	signed:0;
	field:__data_loc cpumask_t mask;	offset:52;	size:4;	signed:0;
	field:const char * ptr;	offset:56;	size:8;	signed:0;
	field:u32 args[2];	offset:64;	size:8;	signed:0;

print fmt: "x"
`

func testSamples(t *testing.T) (*parse.Format, []Sample) {
	t.Helper()
	f, err := parse.ParseFormat("gen_test", testFormat)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"bash", "kworker/0:1", "kv_worker", "systemd-journal", "a[b]*c?", `back\slash`, "it's", ""}
	paths := []string{"/usr/bin/bash", "/tmp/x y", "", "/lib/x86_64-linux-gnu/libc.so.6"}
	var samples []Sample
	for i := range 40 {
		rec := make([]byte, 72)
		binary.LittleEndian.PutUint16(rec, 90)
		binary.LittleEndian.PutUint32(rec[4:], uint32(1000+i))
		copy(rec[8:24], names[i%len(names)])
		rec[24] = byte(int8(i*7 - 100))
		rec[25] = byte(i & 3)
		binary.LittleEndian.PutUint16(rec[26:], uint16(8000+i*1000))
		binary.LittleEndian.PutUint32(rec[28:], uint32(int32(i*i-300)))
		binary.LittleEndian.PutUint64(rec[32:], uint64(int64(i)*-1e12))
		binary.LittleEndian.PutUint64(rec[40:], 0xffff888100000000+uint64(i)<<12)
		p := paths[i%len(paths)]
		binary.LittleEndian.PutUint32(rec[48:], uint32(len(p)+1)<<16|72)
		rec = append(append(rec, p...), 0)
		binary.LittleEndian.PutUint32(rec[52:], 8<<16|uint32(len(rec)))
		mask := make([]byte, 8)
		mask[0] = byte(i)
		rec = append(rec, mask...)
		samples = append(samples, Sample{Rec: rec, CPU: i % 4, PID: -1, Comm: names[(i+3)%len(names)]})
	}
	return f, samples
}

// TestGeneratorCoverage generates filters and requires each to parse and
// bind, the run to cover every feature, and many filters to pass some
// samples and fail others.
func TestGeneratorCoverage(t *testing.T) {
	f, samples := testSamples(t)
	g, err := New(rand.New(rand.NewPCG(1, 2)), f, samples, Options{Pseudo: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	split := 0
	const n = 2000
	for range n {
		src := g.Filter()
		e, err := parse.ParseFilter("gen", src)
		if err != nil {
			t.Fatalf("ParseFilter(%q) = %v", src, err)
		}
		bf, err := parse.BindFilter("gen", src, e, f)
		if err != nil {
			t.Fatalf("BindFilter(%q) = %v", src, err)
		}
		for _, name := range Features(bf) {
			if !slices.Contains(AllFeatures, name) {
				t.Errorf("Features(%q) names %q, which AllFeatures lacks", src, name)
			}
			seen[name]++
		}
		pass := 0
		for _, s := range samples {
			if eval.Match(bf, s.Rec, eval.Context{PID: s.PID, CPU: s.CPU, Comm: s.Comm}) {
				pass++
			}
		}
		if pass > 0 && pass < len(samples) {
			split++
		}
		// The canonical text must mean the same.
		again, err := parse.ParseFilter("gen", e.String())
		if err != nil || again.String() != e.String() {
			t.Errorf("%q prints as %q, which parses to %v, %v", src, e.String(), again, err)
		}
	}
	for _, name := range AllFeatures {
		if seen[name] == 0 {
			t.Errorf("no filter of %d has %q", n, name)
		}
	}
	if split < n/3 {
		t.Errorf("%d of %d filters pass some samples and fail others, want at least a third", split, n)
	}
	t.Logf("%d of %d filters split the samples; features: %v", split, n, seen)
}

// TestGeneratorKernel checks that Kernel mode writes no bare words and
// keeps CPU lists at MaxCPU.
func TestGeneratorKernel(t *testing.T) {
	f, samples := testSamples(t)
	g, err := New(rand.New(rand.NewPCG(3, 4)), f, samples, Options{Kernel: true, MaxCPU: 3, Pseudo: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		src := g.Filter()
		e, err := parse.ParseFilter("gen", src)
		if err != nil {
			t.Fatalf("ParseFilter(%q) = %v", src, err)
		}
		bf, err := parse.BindFilter("gen", src, e, f)
		if err != nil {
			t.Fatalf("BindFilter(%q) = %v", src, err)
		}
		parse.WalkPreds(bf.Root, func(p *parse.BoundPred) {
			if p.Pred.Value.Kind == parse.ValWord {
				t.Errorf("%q: bare word %q in Kernel mode", src, p.Pred.Value.Text)
			}
			for _, r := range p.CPUs {
				if r.Last > 3 {
					t.Errorf("%q: CPU %d above MaxCPU 3", src, r.Last)
				}
			}
		})
	}
}

// TestGeneratorFields checks which fields New leaves out.
func TestGeneratorFields(t *testing.T) {
	f, samples := testSamples(t)
	g, err := New(rand.New(rand.NewPCG(5, 6)), f, samples, Options{Skip: func(fld *parse.Field) bool { return fld.Common }})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range g.fields {
		got = append(got, fmt.Sprintf("%s:%d", op.name, op.kind))
	}
	want := []string{"name:1", "small:0", "flag:0", "port:0", "delta:0", "big:0", "addr:0", "path:1", "mask:2"}
	if !slices.Equal(got, want) {
		t.Errorf("operands = %v, want %v", got, want)
	}
}
