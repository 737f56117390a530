package report

import (
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
)

// This file evaluates print fmt arguments the way libtraceevent 1.7 does
// (eval_num_arg, print_str_arg and the %p helpers), fallbacks and all.

// rec is the record being printed.
type rec struct {
	ev   *event
	data []byte
	cpu  int
	ts   uint64
}

// evalNum is eval_num_arg: the numeric value of an argument.
func (p *printer) evalNum(r *rec, n *node) uint64 {
	switch n.kind {
	case nAtom:
		if n.numOK {
			return n.num
		}
		v := parse.CStrtoull(n.text)
		if v == 0 {
			v = p.symbolValue(n)
		}
		n.num, n.numOK = v, true
		return v
	case nField:
		f := n.field
		if f == nil || f.offset+f.size > len(r.data) {
			return 0
		}
		return p.readNum(r.data, f.offset, f.size)
	case nType:
		return parse.CastValue(p.evalNum(r, n.left), n.text)
	case nFunc:
		var scratch []byte
		_, v := p.callHelper(scratch, r, n)
		return v
	case nOp:
		return p.evalOp(r, n)
	case nDynArrayLen:
		if n.field == nil {
			return 0
		}
		_, l := p.dynOffset(n.field, r.data)
		return uint64(l)
	}
	// Flags, symbols, strings, arrays and masks are 0 as numbers, and so
	// is the address of a dynamic array, which libtraceevent takes from
	// its own memory.
	return 0
}

// symbolValue is test_for_symbol: a name that is not a number is looked
// up in kallsyms; libtraceevent then rewrites the atom as that number.
func (p *printer) symbolValue(n *node) uint64 {
	if n.text == "" || n.text[0] >= '0' && n.text[0] <= '9' {
		return 0
	}
	v := p.syms().lookupName(n.text)
	n.text = strconv.FormatInt(int64(v), 10)
	return v
}

func (p *printer) evalOp(r *rec, n *node) uint64 {
	switch n.text {
	case "[":
		return p.evalIndex(r, n)
	case "?":
		arms := n.right
		if arms.kind != nOp {
			return 0
		}
		if p.evalNum(r, n.left) != 0 {
			return p.evalNum(r, arms.left)
		}
		return p.evalNum(r, arms.right)
	}
	l := p.evalNum(r, n.left)
	rv := p.evalNum(r, n.right)
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	switch n.text {
	case "!":
		return b(rv == 0)
	case "!=":
		return b(l != rv)
	case "~":
		return ^rv
	case "|":
		return l | rv
	case "||":
		return b(l != 0 || rv != 0)
	case "&":
		return l & rv
	case "&&":
		return b(l != 0 && rv != 0)
	case "<":
		return b(l < rv)
	case "<<":
		return l << (rv & 63)
	case "<=":
		return b(l <= rv)
	case ">":
		return b(l > rv)
	case ">>":
		return l >> (rv & 63)
	case ">=":
		return b(l >= rv)
	case "==":
		return b(l == rv)
	case "-":
		return l - rv
	case "+":
		return l + rv
	case "/":
		if rv == 0 {
			return 0
		}
		return l / rv
	case "%":
		if rv == 0 {
			return 0
		}
		return l % rv
	case "*":
		return l * rv
	}
	// libtraceevent knows no other operator here ('^' among them).
	return 0
}

// evalIndex is an array access: REC->arr[i], possibly through casts, or
// (u16 *)__get_dynamic_array(a)[i].
func (p *printer) evalIndex(r *rec, n *node) uint64 {
	idx := p.evalNum(r, n.right)
	l := n.left
	var cast *node
	for l.kind == nType {
		if cast == nil {
			cast = l
		}
		l = l.left
	}
	size := p.longSize
	var off uint64
	switch l.kind {
	case nDynArray:
		if l.field == nil {
			return 0
		}
		o, _ := p.dynOffset(l.field, r.data)
		off = uint64(uint32(o) + uint32(idx))
		if l.field.elementSize != 0 {
			size = l.field.elementSize
		}
	case nField:
		if l.field == nil {
			return 0
		}
		size = l.field.elementSize
		off = uint64(uint32(l.field.offset) + uint32(idx)*uint32(l.field.elementSize))
	default:
		return 0
	}
	if off+uint64(size) > uint64(len(r.data)) {
		return 0
	}
	v := p.readNum(r.data, int(off), size)
	if cast != nil {
		v = castPointee(v, cast.text)
	}
	return v
}

// castPointee applies a pointer cast's pointee type to a value read
// through it (eval_type with pointer set): "u16 *" keeps 16 bits.
func castPointee(v uint64, typ string) uint64 {
	if len(typ) < 2 || typ[len(typ)-1] != '*' {
		return v
	}
	return parse.CastValue(v, typ[:len(typ)-2])
}

// printStr is print_str_arg: an argument printed through a %s-like spec.
func (p *printer) printStr(b []byte, r *rec, spec *cspec, n *node) []byte {
	switch n.kind {
	case nAtom, nBString:
		return spec.appendStr(b, []byte(n.text))
	case nField:
		f := n.field
		if f == nil {
			return b
		}
		if f.flags&fArray == 0 && f.size == p.longSize {
			addr := p.readNum(r.data, f.offset, f.size)
			if s, ok := p.printk[addr]; ok {
				return append(b, s...)
			}
			return appendHex(b, addr)
		}
		size := f.size
		if size == 0 {
			size = len(r.data) - f.offset
		}
		return spec.appendStr(b, cstr(clip(r.data, f.offset, size)))
	case nFlags:
		return p.printFlags(b, r, spec, n)
	case nSymbol:
		v := int64(p.evalNum(r, n.args[0]))
		for _, s := range n.syms {
			if v == s.fval {
				return spec.appendStr(b, []byte(s.str))
			}
		}
		return append0x(b, uint64(v))
	case nHex, nHexStr:
		return p.printHex(b, r, n)
	case nIntArray:
		return p.printIntArray(b, r, n)
	case nString:
		if n.field == nil {
			return b
		}
		off, l := p.dynOffset(n.field, r.data)
		if l == 0 {
			return b
		}
		return spec.appendStr(b, cstr(overread(r.data, off)))
	case nBitmask:
		if n.field == nil {
			return b
		}
		off, l := p.dynOffset(n.field, r.data)
		return spec.appendStr(b, p.bitmask(clip(r.data, off, l)))
	case nCpumask:
		if n.field == nil {
			return b
		}
		off, l := p.dynOffset(n.field, r.data)
		return spec.appendStr(b, p.cpumask(clip(r.data, off, l)))
	case nOp:
		if n.text != "?" || n.right.kind != nOp {
			return b
		}
		if p.evalNum(r, n.left) != 0 {
			return p.printStr(b, r, spec, n.right.left)
		}
		return p.printStr(b, r, spec, n.right.right)
	case nFunc:
		b, _ = p.callHelper(b, r, n)
		return b
	}
	return b
}

// clip returns up to n bytes of data from off, within the record.
func clip(data []byte, off, n int) []byte {
	if off < 0 || off > len(data) || n < 0 {
		return nil
	}
	return data[off:min(len(data), off+n)]
}

func (p *printer) printFlags(b []byte, r *rec, spec *cspec, n *node) []byte {
	v := int64(p.evalNum(r, n.args[0]))
	printed := false
	for _, s := range n.syms {
		if p.full(b) {
			break
		}
		if v == 0 && s.fval < 0 {
			b = spec.appendStr(b, []byte(s.str))
			break
		}
		if s.fval > 0 && v&s.fval == s.fval {
			if printed {
				b = append(b, n.delim...)
			}
			b = spec.appendStr(b, []byte(s.str))
			printed = true
			v &^= s.fval
		}
	}
	if v != 0 {
		if printed {
			b = append(b, n.delim...)
		}
		b = append0x(b, uint64(v))
	}
	return b
}

// hexData returns the bytes a __print_hex or __print_array argument
// points at.
func (p *printer) hexData(r *rec, a *node) ([]byte, bool) {
	switch a.kind {
	case nDynArray:
		if a.field == nil {
			return nil, false
		}
		off, _ := p.dynOffset(a.field, r.data)
		return overread(r.data, off), true
	case nField:
		if a.field == nil {
			return nil, false
		}
		return overread(r.data, a.field.offset), true
	}
	return nil, false
}

func (p *printer) printHex(b []byte, r *rec, n *node) []byte {
	buf, ok := p.hexData(r, n.args[0])
	if !ok {
		return b
	}
	l := uint32(p.evalNum(r, n.args[1]))
	for i := uint32(0); i < l && !p.full(b); i++ {
		if i > 0 && n.kind == nHex {
			b = append(b, ' ')
		}
		var c byte
		if int(i) < len(buf) {
			c = buf[i]
		}
		b = appendHex2(b, c)
	}
	return b
}

func (p *printer) printIntArray(b []byte, r *rec, n *node) []byte {
	buf, ok := p.hexData(r, n.args[0])
	if !ok {
		return b
	}
	l := uint32(p.evalNum(r, n.args[1]))
	size := int32(p.evalNum(r, n.args[2]))
	at := 0
	for i := uint32(0); i < l && !p.full(b); i++ {
		if i > 0 {
			b = append(b, ' ')
		}
		if at >= len(buf) {
			// Past the record: libtraceevent would read what follows it.
			b = append(b, '0')
			continue
		}
		switch size {
		case 1, 2, 4, 8:
			var v uint64
			for k := int(size) - 1; k >= 0; k-- {
				v <<= 8
				if at+k < len(buf) {
					v |= uint64(buf[at+k])
				}
			}
			b = strconv.AppendUint(b, v, 10)
			at += int(size)
		default:
			b = append(b, "BAD SIZE:"...)
			b = strconv.AppendInt(b, int64(size), 10)
			b = append(b, " 0x"...)
			b = strconv.AppendUint(b, uint64(buf[at]), 16)
			at++
			size = 1 // libtraceevent reads the rest a byte at a time
		}
	}
	return b
}

// bitmask formats a bitmask as the kernel's %*pb: hex words, most
// significant first, a comma every 32 bits.
func (p *printer) bitmask(data []byte) []byte {
	size := len(data)
	if size == 0 {
		return nil
	}
	nbits := size * 8
	n := (nbits+3)/4 + (nbits-1)/32
	s := make([]byte, n)
	l := 0
	for i := n - 2; i >= 0; i -= 2 {
		idx := l
		if p.bigEndian {
			idx = size - (l + 1)
		}
		appendHex2(s[i:i], data[idx])
		l++
		if l&3 == 0 && i > 0 {
			i--
			s[i] = ','
		}
	}
	return s
}

// cpumask formats a bitmask as the kernel's %*pbl: ranges of set bits,
// "0-3,8".
func (p *printer) cpumask(data []byte) []byte {
	size := len(data)
	var s []byte
	first := true
	one, zero := -1, -1
	for i := 0; i < size; i++ {
		idx := i
		if p.bigEndian {
			idx = size - (i + 1)
		}
		c := uint(data[idx])
		for {
			if one < 0 && c != 0 {
				one = lowBit(c)
				c |= 1<<uint(one) - 1
				one += i * 8
			}
			if one < 0 {
				break
			}
			if ^c&0xff != 0 {
				zero = lowBit(^c & 0xff)
				c &^= 1<<uint(zero) - 1
				zero += i * 8
			} else if i == size-1 {
				zero = size * 8
				c = 0
			} else {
				break
			}
			if !first {
				s = append(s, ',')
			}
			first = false
			s = strconv.AppendInt(s, int64(one), 10)
			if zero > one+1 {
				s = append(s, '-')
				s = strconv.AppendInt(s, int64(zero-1), 10)
			}
			one, zero = -1, -1
			if c == 0 {
				break
			}
		}
	}
	return s
}

// lowBit returns the index of the lowest set bit of c (c != 0).
func lowBit(c uint) int {
	n := 0
	for c&1 == 0 {
		c >>= 1
		n++
	}
	return n
}

// printPointer is print_arg_pointer: %p and its extensions.
func (p *printer) printPointer(b []byte, r *rec, s *seg, plen int) []byte {
	n := s.arg
	if n.kind == nBString {
		return append(b, n.text...)
	}
	ext := s.ext
	var c byte
	if ext != "" {
		c = ext[0]
	}
	switch c {
	case 'F', 'f', 'S', 's':
		v := p.evalNum(r, n)
		if e, ok := p.syms().find(v); ok {
			b = append(b, e.name...)
			if c == 'F' || c == 'S' {
				b = append(b, "+0x"...)
				b = appendHex(b, v-e.addr)
			}
			return b
		}
		return append0x(b, v)
	case 'M', 'm':
		return p.printMAC(b, r, ext, n)
	case 'I', 'i':
		return p.printIP(b, r, ext, n)
	case 'U':
		return p.printUUID(b, r, ext, n)
	case 'h':
		return p.printRawBuf(b, r, ext, n, plen)
	}
	return appendPointer(b, p.evalNum(r, n))
}

// fieldArg strips casts and returns the field an argument names; ok is
// false (and b holds libtraceevent's complaint) for anything else.
func (p *printer) fieldArg(b []byte, n *node) ([]byte, *field, bool) {
	for n.kind == nType {
		n = n.left
	}
	if n.kind != nField {
		b = append(b, "ARG TYPE NOT FIELD BUT "...)
		return strconv.AppendInt(b, int64(n.kind), 10), nil, false
	}
	return b, n.field, n.field != nil
}

func (p *printer) printMAC(b []byte, r *rec, ext string, n *node) []byte {
	if n.kind == nFunc {
		b, _ = p.callHelper(b, r, n)
		return b
	}
	b, f, ok := p.fieldArg(b, n)
	if !ok {
		return b
	}
	sep := ":"
	if ext[0] == 'm' {
		sep = ""
	} else if len(ext) > 1 && ext[1] == 'F' {
		sep = "-"
	}
	reverse := len(ext) > 1 && ext[1] == 'R'
	if f.size != 6 {
		return append(b, "INVALIDMAC"...)
	}
	buf := clip(r.data, f.offset, 6)
	for i := 0; i < 6; i++ {
		if i > 0 {
			b = append(b, sep...)
		}
		k := i
		if reverse {
			k = 5 - i
		}
		var c byte
		if k < len(buf) {
			c = buf[k]
		}
		b = appendHex2(b, c)
	}
	return b
}

// printIP handles %pI4 %pi4 %pI6 %pi6 %pI6c and %pIS/%piS with their
// options.
func (p *printer) printIP(b []byte, r *rec, ext string, n *node) []byte {
	if len(ext) < 2 {
		return b
	}
	i := ext[0]
	opts := ext[2:]
	switch ext[1] {
	case '4':
		reverse := p.ip4Order(opts)
		if n.kind == nFunc {
			b, _ = p.callHelper(b, r, n)
			return b
		}
		b, f, ok := p.fieldArg(b, n)
		if !ok {
			return b
		}
		if f.size != 4 {
			return append(b, "INVALIDIPv4"...)
		}
		return appendIP4(b, i, reverse, padded(r.data, f.offset, 4))
	case '6':
		compressed := i == 'I' && opts != "" && opts[0] == 'c'
		if n.kind == nFunc {
			b, _ = p.callHelper(b, r, n)
			return b
		}
		b, f, ok := p.fieldArg(b, n)
		if !ok {
			return b
		}
		if f.size != 16 {
			return append(b, "INVALIDIPv6"...)
		}
		buf := padded(r.data, f.offset, 16)
		if compressed {
			return appendIP6c(b, buf)
		}
		return appendIP6(b, i, buf)
	case 'S':
		return p.printSockaddr(b, r, i, opts, n)
	}
	return b
}

// ip4Order reads the byte-order letter of %pI4 (h n b l): whether the
// address bytes are to be reversed.
func (p *printer) ip4Order(opts string) bool {
	if opts == "" {
		return false
	}
	switch opts[0] {
	case 'h':
		return !p.bigEndian
	case 'l':
		return true
	}
	return false
}

// padded returns n bytes at off, zero-filled past the record.
func padded(data []byte, off, n int) []byte {
	buf := make([]byte, n)
	copy(buf, clip(data, off, n))
	return buf
}

func appendIP4(b []byte, i byte, reverse bool, a []byte) []byte {
	for k := 0; k < 4; k++ {
		if k > 0 {
			b = append(b, '.')
		}
		c := a[k]
		if reverse {
			c = a[3-k]
		}
		if i == 'i' {
			b = append(b, '0'+c/100, '0'+c/10%10, '0'+c%10)
		} else {
			b = strconv.AppendUint(b, uint64(c), 10)
		}
	}
	return b
}

func appendIP6(b []byte, i byte, a []byte) []byte {
	for j := 0; j < 16; j += 2 {
		b = appendHex2(b, a[j])
		b = appendHex2(b, a[j+1])
		if i == 'I' && j < 14 {
			b = append(b, ':')
		}
	}
	return b
}

// appendIP6c is the compressed IPv6 form of %pI6c, as the kernel (and
// libtraceevent) print it.
func appendIP6c(b []byte, a []byte) []byte {
	word := func(k int) uint16 { return uint16(a[2*k])<<8 | uint16(a[2*k+1]) }
	v4mapped := a[0]|a[1]|a[2]|a[3]|a[4]|a[5]|a[6]|a[7] == 0 && a[8] == 0 && a[9] == 0 && a[10] == 0xff && a[11] == 0xff
	isatap := a[8]|0x02 == 0x02 && a[9] == 0 && a[10] == 0x5e && a[11] == 0xfe
	useIP4 := v4mapped || isatap
	rng := 8
	if useIP4 {
		rng = 6
	}
	var zeros [8]int
	for k := 0; k < rng; k++ {
		for j := k; j < rng && word(j) == 0; j++ {
			zeros[k]++
		}
	}
	longest, colon := 1, -1
	for k := 0; k < rng; k++ {
		if zeros[k] > longest {
			longest, colon = zeros[k], k
		}
	}
	if longest == 1 {
		colon = -1
	}
	need := false
	for k := 0; k < rng; k++ {
		if k == colon {
			if need || k == 0 {
				b = append(b, ':')
			}
			b = append(b, ':')
			need = false
			k += longest - 1
			continue
		}
		if need {
			b = append(b, ':')
		}
		w := word(k)
		if hi := byte(w >> 8); hi != 0 {
			b = strconv.AppendUint(b, uint64(hi), 16)
			b = appendHex2(b, byte(w))
		} else {
			b = strconv.AppendUint(b, uint64(w&0xff), 16)
		}
		need = true
	}
	if useIP4 {
		if need {
			b = append(b, ':')
		}
		b = appendIP4(b, 'I', false, a[12:16])
	}
	return b
}

// printSockaddr is %pIS (and %piS): a struct sockaddr of family AF_INET
// or AF_INET6 in a field or a dynamic array.
func (p *printer) printSockaddr(b []byte, r *rec, i byte, opts string, n *node) []byte {
	port, compressed := false, false
	if i == 'I' {
		if opts != "" && opts[0] == 'p' {
			port, opts = true, opts[1:]
		}
		if opts != "" && opts[0] == 'c' {
			compressed, opts = true, opts[1:]
		}
	}
	reverse := p.ip4Order(opts)
	if n.kind == nFunc {
		b, _ = p.callHelper(b, r, n)
		return b
	}
	for n.kind == nType {
		n = n.left
	}
	var off, l int
	switch n.kind {
	case nField:
		if n.field == nil {
			return b
		}
		off, l = n.field.offset, n.field.size
	case nDynArray:
		if n.field == nil {
			return b
		}
		off, l = p.dynOffset(n.field, r.data)
	default:
		b = append(b, "ARG NOT FIELD NOR DYNAMIC ARRAY BUT TYPE "...)
		return strconv.AppendInt(b, int64(n.kind), 10)
	}
	sa := padded(r.data, off, 28)
	family := uint16(sa[0]) | uint16(sa[1])<<8
	portNum := uint16(sa[2])<<8 | uint16(sa[3])
	switch family {
	case 2: // AF_INET
		if l < 16 {
			return append(b, "INVALIDIPv4"...)
		}
		b = appendIP4(b, i, reverse, sa[4:8])
		if port {
			b = append(b, ':')
			b = strconv.AppendUint(b, uint64(portNum), 10)
		}
	case 10: // AF_INET6
		if l < 28 {
			return append(b, "INVALIDIPv6"...)
		}
		if port {
			b = append(b, '[')
		}
		if compressed {
			b = appendIP6c(b, sa[8:24])
		} else {
			b = appendIP6(b, i, sa[8:24])
		}
		if port {
			b = append(b, "]:"...)
			b = strconv.AppendUint(b, uint64(portNum), 10)
		}
	}
	return b
}

// uuidGUID is the byte order of %pUl and %pUL.
var uuidGUID = [16]int{3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15}

func (p *printer) printUUID(b []byte, r *rec, ext string, n *node) []byte {
	upper, guid := false, false
	if len(ext) > 1 {
		switch ext[1] {
		case 'L':
			upper, guid = true, true
		case 'l':
			guid = true
		case 'B':
			upper = true
		}
	}
	if n.kind == nFunc {
		b, _ = p.callHelper(b, r, n)
		return b
	}
	b, f, ok := p.fieldArg(b, n)
	if !ok {
		return b
	}
	if f.size != 16 {
		return append(b, "INVALIDUUID"...)
	}
	buf := padded(r.data, f.offset, 16)
	const lower, upperDigits = "0123456789abcdef", "0123456789ABCDEF"
	digits := lower
	if upper {
		digits = upperDigits
	}
	for k := 0; k < 16; k++ {
		c := buf[k]
		if guid {
			c = buf[uuidGUID[k]]
		}
		b = append(b, digits[c>>4], digits[c&15])
		switch k {
		case 3, 5, 7, 9:
			b = append(b, '-')
		}
	}
	return b
}

// printRawBuf is %ph (with C, D or N): plen bytes of a dynamic array in
// hex.
func (p *printer) printRawBuf(b []byte, r *rec, ext string, n *node, plen int) []byte {
	sep := " "
	if len(ext) > 1 {
		switch ext[1] {
		case 'C':
			sep = ":"
		case 'D':
			sep = "-"
		case 'N':
			sep = ""
		}
	}
	if n.kind == nFunc {
		b, _ = p.callHelper(b, r, n)
		return b
	}
	if n.kind != nDynArray {
		b = append(b, "ARG TYPE NOT FIELD BUT "...)
		return strconv.AppendInt(b, int64(n.kind), 10)
	}
	if n.field == nil {
		return b
	}
	off, l := p.dynOffset(n.field, r.data)
	if uint32(l) < uint32(plen) {
		plen = l
	}
	if plen < 1 {
		return b
	}
	buf := padded(r.data, off, plen)
	b = appendHex2(b, buf[0])
	for i := 1; i < plen; i++ {
		b = append(b, sep...)
		b = appendHex2(b, buf[i])
	}
	return b
}

// printSeg prints one piece of the print format (print_parse_data). It
// prints nothing once the event is full, and no more than the event can
// hold (see limits.go).
func (p *printer) printSeg(b []byte, r *rec, s *seg) []byte {
	if p.full(b) {
		return b
	}
	if s.kind == segText {
		return append(b, s.text[:min(len(s.text), p.room(b))]...)
	}
	var plen int
	spec := &s.spec
	if s.lenArg != nil {
		plen = int(int32(p.evalNum(r, s.lenArg)))
		c := s.spec.star(plen, plen >= 0)
		if plen < 0 && s.kind != segDigit {
			// libtraceevent then calls printf without the '*' argument;
			// the libtraceevent of trace-cmd 3.1.6 (Debian) ends up
			// printing the spec itself in place of the string.
			c.literal = s.text
		}
		spec = &c
	} else if s.kind == segPointer {
		plen = 1
	}
	spec = p.fit(b, spec)
	switch s.kind {
	case segDigit:
		return spec.appendInt(b, p.evalNum(r, s.arg))
	case segPointer:
		return p.printPointer(b, r, s, plen)
	}
	return p.printStr(b, r, spec, s.arg)
}

// pretty prints a record with its event's print fmt (pretty_print).
func (p *printer) pretty(b []byte, r *rec) []byte {
	ev := r.ev
	if ev.failed {
		b = append(b, "[FAILED TO PARSE]"...)
		return p.rawFields(b, r)
	}
	segs := ev.segs
	if ev.bprint {
		segs = p.bprintSegs(r)
	}
	for i := range segs {
		b = p.printSeg(b, r, &segs[i])
	}
	return b
}
