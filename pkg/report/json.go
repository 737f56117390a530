package report

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracedat"
)

// NDJSON prints one JSON object per record, one per line (newline
// delimited JSON), the records of all the file's instances merged by
// timestamp as Text merges them:
//
//	{"cpu":1,"ts_ns":637826270123,"comm":"bash","pid":42,"event":"sched:sched_switch","fields":{"prev_comm":"bash",...}}
//
// The object of a record of an instance other than the top one starts
// with "instance" and the instance's name:
//
//	{"instance":"foo","cpu":0,"ts_ns":637826270456,...}
//
// Fields hold the event's own fields: numbers as numbers (signed fields
// sign extended), arrays of char (static or dynamic) as strings up to
// their NUL, other arrays as arrays of numbers of their element type
// (bytes for types such as cpumask_t or structs). A record after lost events has "missed": the count
// lost, or -1 when the kernel did not store it. A record of an event the
// file has no format for has "event":"unknown" and its "id", and no
// fields. The comm is found as Text finds it.
//
// When ctx is done, NDJSON stops after a whole line, flushes what it has
// printed and returns context.Cause(ctx).
func NDJSON(ctx context.Context, w io.Writer, f *tracedat.File, o Options) error {
	return writeJSON(ctx, w, f, o, false)
}

// JSON prints the records as one JSON document: an object with "cpus",
// what Text prints as "cpus=N", and "events", an array of the objects
// NDJSON prints, one per line:
//
//	{"cpus":2,"events":[
//	{"cpu":1,"ts_ns":637826270123,"comm":"bash","pid":42,"event":"sched:sched_switch","fields":{...}},
//	{"cpu":0,"ts_ns":637826270456,...}
//	]}
//
// When ctx is done, JSON ends the document (a valid one, of the events
// printed so far), flushes it and returns context.Cause(ctx).
func JSON(ctx context.Context, w io.Writer, f *tracedat.File, o Options) error {
	return writeJSON(ctx, w, f, o, true)
}

// writeJSON prints NDJSON, or with doc the JSON document.
func writeJSON(ctx context.Context, w io.Writer, f *tracedat.File, o Options, doc bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	p := filePrinter(f, o)
	b := make([]byte, 0, 1024)
	if doc {
		b = append(b, `{"cpus":`...)
		b = strconv.AppendInt(b, int64(cpuCount(f)), 10)
		b = append(b, ",\"events\":[\n"...)
		bw.Write(b)
	}
	first := true
	m := newMerge(ctx, f, o.CPUs)
	for m.next() {
		tr := m.cur.cur
		id := p.recordType(tr.Data)
		ev := p.eventFor(id)
		if o.Events != nil || o.Filter != nil {
			var fm *parse.Format
			if ev != nil {
				fm = ev.format
			}
			if !p.keep(&o, fm, &tr) {
				continue
			}
		}
		b = b[:0]
		if doc && !first {
			// The comma goes after the previous object, before its
			// newline.
			b = append(b, ",\n"...)
		}
		first = false
		b = p.jsonRecord(b, m.cur.name, &tr, ev, id)
		if doc {
			b = b[:len(b)-1]
		}
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	// A file that cannot be read to its end still gets a closed document:
	// the events read so far, valid JSON, and the error.
	if doc {
		if !first {
			bw.WriteByte('\n')
		}
		bw.WriteString("]}\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write json: %w", err)
	}
	if err := m.err(); err != nil {
		return fmt.Errorf("read records: %w", err)
	}
	return m.stopped()
}

// jsonRecord appends the JSON line of a record of the named instance.
func (p *printer) jsonRecord(b []byte, instance string, tr *tracedat.Record, ev *event, id int) []byte {
	pid := p.recordPid(tr.Data)
	b = append(b, '{')
	if instance != "" {
		b = append(b, `"instance":`...)
		b = appendJSONString(b, []byte(instance))
		b = append(b, ',')
	}
	b = append(b, `"cpu":`...)
	b = strconv.AppendInt(b, int64(tr.CPU), 10)
	b = append(b, `,"ts_ns":`...)
	b = strconv.AppendUint(b, tr.TS, 10)
	if tr.Missed != 0 {
		b = append(b, `,"missed":`...)
		b = strconv.AppendInt(b, tr.Missed, 10)
	}
	b = append(b, `,"comm":`...)
	b = appendJSONString(b, []byte(p.comms.find(pid)))
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(pid), 10)
	if ev == nil {
		b = append(b, `,"event":"unknown","id":`...)
		b = strconv.AppendInt(b, int64(id), 10)
		return append(b, "}\n"...)
	}
	b = append(b, `,"event":`...)
	b = appendJSONString(b, []byte(ev.full))
	b = append(b, `,"fields":{`...)
	r := &p.rec
	*r = rec{ev: ev, data: tr.Data, cpu: tr.CPU, ts: tr.TS}
	for i, f := range ev.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, []byte(f.name))
		b = append(b, ':')
		b = p.jsonValue(b, r, f)
	}
	p.learnComms(r)
	return append(b, "}}\n"...)
}

// jsonValue appends a field's value.
func (p *printer) jsonValue(b []byte, r *rec, f *field) []byte {
	data := r.data
	t := f.typ
	if !strings.HasSuffix(t, "]") && f.flags&fDynamic == 0 {
		v := p.readNum(data, f.offset, f.size)
		if f.flags&fSigned != 0 {
			return strconv.AppendInt(b, signExtend(v, f.size), 10)
		}
		return strconv.AppendUint(b, v, 10)
	}
	off, n := f.offset, f.size
	if f.flags&fDynamic != 0 {
		off, n = p.dynOffset(f, data)
	} else if n == 0 {
		n = len(data) - off // a flexible array runs to the end
	}
	buf := clip(data, off, n)
	size, signed, str := p.elemType(t)
	if str {
		return appendJSONString(b, cstr(buf))
	}
	b = append(b, '[')
	for i := 0; i+size <= len(buf); i += size {
		if i > 0 {
			b = append(b, ',')
		}
		v := p.readNum(buf, i, size)
		if signed {
			b = strconv.AppendInt(b, signExtend(v, size), 10)
		} else {
			b = strconv.AppendUint(b, v, 10)
		}
	}
	return append(b, ']')
}

// elemType reads the element type of an array field's C type ("u32[]",
// "__data_loc char[]", "unsigned long[6]"): its size (1 for types it does
// not know, such as structs), whether it is signed, and whether the array
// is text (char or const char).
func (p *printer) elemType(t string) (size int, signed, str bool) {
	t = strings.TrimPrefix(t, "__data_loc ")
	t = strings.TrimPrefix(t, "__rel_loc ")
	if i := strings.IndexByte(t, '['); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	t = strings.TrimPrefix(t, "const ")
	switch t {
	case "char":
		return 1, true, true
	case "s8", "__s8", "signed char":
		return 1, true, false
	case "s16", "__s16", "short", "signed short":
		return 2, true, false
	case "u16", "__u16", "unsigned short", "__le16", "__be16":
		return 2, false, false
	case "s32", "__s32", "int", "signed int", "pid_t":
		return 4, true, false
	case "u32", "__u32", "unsigned int", "unsigned", "__le32", "__be32", "gfp_t":
		return 4, false, false
	case "s64", "__s64", "long long", "signed long long":
		return 8, true, false
	case "u64", "__u64", "unsigned long long", "__le64", "__be64":
		return 8, false, false
	case "long", "signed long":
		return p.longSize, true, false
	case "unsigned long", "size_t":
		return p.longSize, false, false
	}
	return 1, false, false
}

func signExtend(v uint64, size int) int64 {
	switch size {
	case 1:
		return int64(int8(v))
	case 2:
		return int64(int16(v))
	case 4:
		return int64(int32(v))
	}
	return int64(v)
}

// learnComms teaches the comms that trace-cmd's sched plugin learns when
// it prints sched_switch and sched_wakeup records.
func (p *printer) learnComms(r *rec) {
	switch r.ev.full {
	case "sched:sched_switch":
		p.learn(r, "prev_comm", "prev_pid")
		p.learn(r, "next_comm", "next_pid")
	case "sched:sched_wakeup", "sched:sched_wakeup_new":
		p.learn(r, "comm", "pid")
	}
}

func (p *printer) learn(r *rec, comm, pid string) {
	c := r.ev.findAnyField(comm)
	_, v, ok := p.fieldVal(nil, r, pid, false)
	if c != nil && ok {
		p.comms.register(int32(v), cstr(clip(r.data, c.offset, c.size)))
	}
}

// appendJSONString appends s as a JSON string; bytes that are not UTF-8
// become U+FFFD.
func appendJSONString(b []byte, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
