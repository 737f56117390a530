package report

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// crashers are events whose random records make trace-cmd 3.1.6 crash
// (it reads far past the record for a huge __print_hex length).
var crashers = []string{"ras:arm_event", "ras:non_standard_event"}

// allFormatsFile builds a file with two random records of every event
// format of a 6.18 kernel (all that testdata/captured/all2.dat stores):
// numbers small, large, negative, kernel addresses and printk string
// addresses; strings printable or not, empty or missing their NUL.
func allFormatsFile(t *testing.T) string {
	t.Helper()
	src := openDat(t, filepath.Join("testdata", "captured", "all2.dat"))
	var ids []int
	for id := range src.Events {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	syms := kallsymsAddrs(src.Kallsyms)
	strs := kallsymsAddrs(strings.ReplaceAll(src.Printk, " : ", " x "))
	m := buildMeta{
		kallsyms: src.Kallsyms,
		printk:   src.Printk,
		cmdlines: map[int]string{100: "bash", 101: "sleep", 102: "my proc"},
		cpus:     2,
	}
	var recs []trec
	ts := uint64(1_000_000_000)
	for _, id := range ids {
		e := src.Events[id]
		fm := e.Format
		m.formats = append(m.formats, tracedat.FormatText{System: fm.System, Text: e.Text})
		if slices.Contains(crashers, fm.FullName()) {
			continue
		}
		rnd := rand.New(rand.NewSource(int64(id)))
		for i := 0; i < 2; i++ {
			data := randomRecord(fm, rnd, syms, strs)
			if len(data) > 3000 {
				continue
			}
			ts += uint64(rnd.Intn(5000)) + 1
			recs = append(recs, trec{cpu: rnd.Intn(2), ts: ts, data: data})
		}
	}
	return buildDat(t, m, recs)
}

// kallsymsAddrs returns the addresses at the start of the lines of text.
func kallsymsAddrs(text string) []uint64 {
	var out []uint64
	for line := range strings.SplitSeq(text, "\n") {
		if a := parse.CStrtoull("0x" + strings.TrimPrefix(strings.Fields(line + " x")[0], "0x")); a != 0 {
			out = append(out, a)
		}
	}
	return out
}

const printableChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-/.: "

func randomText(rnd *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = printableChars[rnd.Intn(len(printableChars))]
	}
	return b
}

// randomRecord fills the fields of a record of fm with random values.
func randomRecord(fm *parse.Format, rnd *rand.Rand, syms, strs []uint64) []byte {
	size := 0
	for _, f := range fm.Fields {
		size = max(size, f.Offset+f.Size)
	}
	data := make([]byte, size)
	for i := range fm.Fields {
		f := &fm.Fields[i]
		d := data[f.Offset : f.Offset+f.Size]
		switch {
		case f.Name == "common_type":
			d[0], d[1] = byte(fm.ID), byte(fm.ID>>8)
		case f.Name == "common_pid":
			pids := []uint32{0, 100, 101, 102, 9999, 1}
			v := pids[rnd.Intn(len(pids))]
			d[0], d[1], d[2], d[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		case f.Class == parse.ClassDataLoc || f.Class == parse.ClassRelLoc:
			var s []byte
			switch rnd.Intn(5) {
			case 0:
			case 1:
				s = append(randomText(rnd, rnd.Intn(20)), 0)
			case 2:
				s = make([]byte, rnd.Intn(24))
				rnd.Read(s)
			default:
				s = append(randomText(rnd, 1+rnd.Intn(12)), 0)
			}
			data = putBytes(data, f, s)
		case f.Size == 0:
			s := append(randomText(rnd, rnd.Intn(30)), '\n', 0)
			if rnd.Intn(3) == 0 {
				s = make([]byte, 16+rnd.Intn(16))
				rnd.Read(s)
			}
			data = append(data[:f.Offset], s...)
		case f.Size == 1 || f.Size == 2 || f.Size == 4 || f.Size == 8:
			var v uint64
			switch rnd.Intn(9) {
			case 0:
			case 1:
				v = 1
			case 2:
				v = uint64(rnd.Intn(20))
			case 3:
				v = rnd.Uint64()
			case 4:
				v = ^uint64(0)
			case 5:
				v = uint64(rnd.Intn(1000))
				if f.Size == 8 && len(syms) > 0 {
					v = syms[rnd.Intn(len(syms))] + uint64(rnd.Intn(3)*rnd.Intn(200))
				}
			case 6:
				v = uint64(rnd.Intn(300))
				if f.Size == 8 && len(strs) > 0 {
					v = strs[rnd.Intn(len(strs))]
				}
			case 7:
				v = 1 << uint(rnd.Intn(f.Size*8))
			default:
				v = uint64(rnd.Intn(1 << 16))
			}
			for i := range d {
				d[i] = byte(v >> (8 * i))
			}
		default:
			if rnd.Intn(3) > 0 {
				copy(d, randomText(rnd, rnd.Intn(f.Size+1)))
			} else {
				rnd.Read(d)
			}
		}
	}
	return data
}

// TestAllFormats prints random records of every event of a 6.18 kernel
// and compares with trace-cmd's report of them (kept gzipped).
func TestAllFormats(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: builds a file of every event format")
	}
	dat := allFormatsFile(t)
	f := openDat(t, dat)
	for _, tt := range []struct {
		golden string
		o      Options
		args   []string
	}{
		{"allformats.report.txt.gz", Options{}, nil},
		{"allformats.report-R.txt.gz", Options{Raw: true}, []string{"-R"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			golden := filepath.Join("testdata", tt.golden)
			if *update {
				var z bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
				zw.Write(traceCmd(t, dat, tt.args...))
				zw.Close()
				if err := os.WriteFile(golden, z.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			zf, err := os.Open(golden)
			if err != nil {
				t.Fatal(err)
			}
			defer zf.Close()
			zr, err := gzip.NewReader(zf)
			if err != nil {
				t.Fatal(err)
			}
			want, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			got := text(t, f, tt.o)
			want = cutLike(got, want)
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s:\n%s", golden, testutil.FirstDiff(string(got), string(want)))
			}
		})
	}
}
