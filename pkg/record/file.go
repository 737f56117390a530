package record

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"

	"github.com/gtrace/gtrace/pkg/tracedat"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// FileOptions say how to write a trace.dat file.
type FileOptions struct {
	Version     int    // file format version, 6 or 7; 0: 7
	Compression string // none or zstd (version 7 only); "": none
	Tracer      string // the recorder's name and version, stored in the VERSION option
}

// file is a trace.dat file being written.
type file struct{ w *tracedat.Writer }

// Create creates the trace.dat file at path for a plan's recording,
// with the metadata of the running kernel: tracefs's header_page and
// header_event, the recorded events' formats, /proc/kallsyms,
// printk_formats, the trace clock and uname.
func Create(path string, fs *tracefs.FS, p *Plan, o FileOptions) (Output, error) {
	m, err := meta(fs, p, o.Tracer)
	if err != nil {
		return nil, err
	}
	w, err := tracedat.Create(path, *m, tracedat.WriteOptions{Version: o.Version, Compression: o.Compression})
	if err != nil {
		return nil, err
	}
	return &file{w: w}, nil
}

func (f *file) CPU(cpu int) PageSink { return f.w.CPU(cpu) }

func (f *file) Finish(st *Stats, cmdlines map[int]string) error {
	for _, c := range st.CPUs {
		f.w.SetCPUStat(c.CPU, cpuStat(c))
	}
	f.w.SetCmdlines(cmdlines)
	return f.w.Close()
}

func (f *file) Abort() { f.w.Abort() }

// cpuStat writes a CPU's counts as the kernel's per_cpu/cpuN/stats file
// does: nothing was left unread and nothing overwritten, the lost events
// were dropped.
func cpuStat(c CPUStats) string {
	return fmt.Sprintf("entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\noldest event ts: %s\nnow ts: %s\ndropped events: %d\nread events: %d\n",
		seconds(c.First), seconds(c.Last), c.Lost, c.Events)
}

// seconds formats a timestamp in ns as the kernel's stats do: %5llu.%06lu.
func seconds(ns uint64) string {
	return fmt.Sprintf("%5d.%06d", ns/1e9, ns%1e9/1e3)
}

// meta collects what the file says about the kernel and the recording.
func meta(fs *tracefs.FS, p *Plan, tracer string) (*tracedat.Meta, error) {
	read := func(elem ...string) (string, error) {
		b, err := fs.ReadFile(elem...)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", strings.Join(elem, "/"), err)
		}
		return string(b), nil
	}
	m := &tracedat.Meta{
		PageSize: p.PageSize,
		Version:  tracer,
		CPUs:     p.FileCPUs,
		TraceID:  rand.Uint64(),
		Uname:    uname(),
	}
	var err error
	if m.HeaderPage, err = read("events", "header_page"); err != nil {
		return nil, err
	}
	if m.HeaderEvent, err = read("events", "header_event"); err != nil {
		return nil, err
	}
	clocks, err := read("trace_clock")
	if err != nil {
		return nil, err
	}
	m.Clock = selectClock(clocks, p.Clock.String())
	// Symbols and printk formats help report print addresses and
	// bprint records; a file without them is still whole.
	if s, err := read("printk_formats"); err == nil {
		m.Printk = []byte(s)
	}
	if b, err := os.ReadFile("/proc/kallsyms"); err == nil {
		m.Kallsyms = b
	}
	for _, ev := range append(p.Events[:len(p.Events):len(p.Events)], p.Synth...) {
		m.Formats = append(m.Formats, tracedat.FormatText{System: ev.Format.System, Text: ev.Text})
	}
	for _, ev := range p.Stacks {
		m.Formats = append(m.Formats, tracedat.FormatText{System: "ftrace", Text: ev.Text})
	}
	return m, nil
}

// selectClock rewrites the text of tracefs's trace_clock file ("[local]
// global ... mono ...") with clock selected instead, adding it if the
// kernel does not list it.
func selectClock(text, clock string) string {
	words := strings.Fields(text)
	found := false
	for i, w := range words {
		w = strings.Trim(w, "[]")
		if w == clock {
			w, found = "["+w+"]", true
		}
		words[i] = w
	}
	if !found {
		words = append(words, "["+clock+"]")
	}
	return strings.Join(words, " ") + "\n"
}

// uname returns "sysname nodename release machine", as trace-cmd stores it.
func uname() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	return strings.Join([]string{cString(u.Sysname[:]), cString(u.Nodename[:]), cString(u.Release[:]), cString(u.Machine[:])}, " ")
}

// cString returns the NUL-terminated string in f; Utsname's fields are
// int8 on some architectures and uint8 on others.
func cString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}
