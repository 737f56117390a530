package report

import (
	"strconv"
	"strings"

	"github.com/gtrace/gtrace/pkg/parse"
)

// bprintSegs builds the print format of an ftrace bprint record (a
// trace_printk): its format string comes from printk_formats by address,
// its arguments are packed in the record's buffer.
func (p *printer) bprintSegs(r *rec) []seg {
	ev := r.ev
	bf := bprintFormat{text: "%ps: "}
	if f := ev.findField("fmt"); f != nil {
		bf = p.bprintFormat(p.readNum(r.data, f.offset, f.size))
	}
	if bf.pieces == nil {
		bf.pieces = parse.ParseFormatPieces(bf.text)
	}
	segs, failed := p.bindFormat(bf.pieces, p.bprintArgs(r, bf.text))
	if failed {
		// libtraceevent marks the event, and prints its next records as
		// [FAILED TO PARSE].
		ev.failed = true
	}
	return segs
}

// bprintFormat is the format of a bprint record: "%ps: " and the printk
// format, split in pieces once for all the records that use it (a crafted
// one may be long).
type bprintFormat struct {
	text   string
	pieces []parse.FmtPiece // nil: not split
}

// bprintFormat returns the format at addr in printk_formats.
func (p *printer) bprintFormat(addr uint64) bprintFormat {
	if bf, ok := p.bprintFormats[addr]; ok {
		return bf
	}
	s, ok := p.printk[addr]
	if !ok {
		return bprintFormat{text: "%ps: (NO FORMAT FOUND at " + strconv.FormatUint(addr, 16) + ")\n"}
	}
	bf := bprintFormat{text: "%ps: " + s}
	bf.pieces = parse.ParseFormatPieces(bf.text)
	if p.bprintFormats == nil {
		p.bprintFormats = map[uint64]bprintFormat{}
	}
	p.bprintFormats[addr] = bf
	return bf
}

// bprintArgs unpacks the arguments of a bprint record (make_bprint_args):
// the ip first, then one value per conversion of the format, 4-byte
// aligned, strings inline.
func (p *printer) bprintArgs(r *rec, format string) []*node {
	ev := r.ev
	buf, ip := ev.findField("buf"), ev.findField("ip")
	if buf == nil || ip == nil {
		return nil
	}
	args := []*node{{kind: nAtom, text: strconv.FormatInt(int64(p.readNum(r.data, ip.offset, ip.size)), 10)}}
	at := buf.offset
	data := r.data
	for i := 5; i < len(format) && at < len(data); i++ {
		if format[i] != '%' {
			j := strings.IndexByte(format[i:], '%')
			if j < 0 {
				break
			}
			i += j
		}
		ls := 0
	again:
		i++
		if i >= len(format) {
			break
		}
		c := format[i]
		switch c {
		case 'l':
			ls++
			goto again
		case 'L':
			ls = 2
			goto again
		case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.', '#':
			goto again
		case 'z', 'Z':
			ls = 1
			goto again
		case 'p', 'd', 'u', 'i', 'x', 'X', 'o', '*':
			if c == 'p' {
				ls = 1
				if i+1 < len(format) && isAlnum(format[i+1]) {
					i++
					switch format[i] {
					case 's', 'S', 'x':
					case 'f', 'F':
						if i+1 < len(format) && format[i+1] == 'w' && at < len(data) && isPrint(data[at]) {
							at = p.bprintString(&args, data, at)
							continue
						}
					default:
						if at < len(data) && isPrint(data[at]) {
							at = p.bprintString(&args, data, at)
							continue
						}
					}
				}
			}
			size := 4
			switch ls {
			case 1:
				size = p.longSize
			case 2:
				size = 8
			default:
				if ls > 2 {
					size = ls
				}
			}
			if c == '*' {
				size = 4
			}
			at = (at + 3) &^ 3
			args = append(args, &node{kind: nAtom, text: strconv.FormatInt(int64(p.readNum(data, at, size)), 10)})
			at += size
			if c == '*' {
				goto again
			}
		case 's':
			at = p.bprintString(&args, data, at)
		}
	}
	return args
}

// bprintString adds the NUL-terminated string at data[at:] as an argument
// and returns the offset after it.
func (p *printer) bprintString(args *[]*node, data []byte, at int) int {
	s := cstr(overread(data, at))
	*args = append(*args, &node{kind: nBString, text: string(s)})
	return at + len(s) + 1
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isPrint(c byte) bool { return c >= 0x20 && c < 0x7f }
