package parse

import (
	"fmt"
	"runtime"
	"strings"
)

// The kernel's words for a bad probe definition (the trace_kprobe and
// trace_uprobe error log), which gtrace's errors keep.
const (
	probeFileNotFound   = "Failed to find the given file"
	probeNoRegularFile  = "Not a regular file"
	probeBadRefcnt      = "Invalid reference counter offset"
	probeRefcntOpen     = "Reference counter brace is not closed"
	probeBadRefcntSfx   = "Reference counter has wrong suffix"
	probeBadUprobeOffs  = "Invalid uprobe offset"
	probeBadMaxactType  = "Maxactive is only for function exit"
	probeBadMaxact      = "Invalid maxactive number"
	probeMaxactTooBig   = "Maxactive is too big"
	probeBadProbeAddr   = "Invalid probed address or symbol"
	probeNonUniqSymbol  = "The symbol is not unique"
	probeBadRetprobe    = "Retprobe address must be an function entry"
	probeBadAddrSuffix  = "Invalid probed address suffix"
	probeNoGroupName    = "Group name is not specified"
	probeGroupTooLong   = "Group name is too long"
	probeBadGroupName   = "Group name must follow the same rules as C identifiers"
	probeNoEventName    = "Event name is not specified"
	probeEventTooLong   = "Event name is too long"
	probeBadEventName   = "Event name must follow the same rules as C identifiers"
	probeEventExist     = "Given group/event name is already used by another event"
	probeRetvalOnProbe  = "$retval is not available on probe"
	probeBadStackNum    = "Invalid stack number"
	probeBadArgNum      = "Invalid argument number"
	probeBadVar         = "Invalid $-variable specified"
	probeBadRegName     = "Invalid register name"
	probeBadMemAddr     = "Invalid memory address"
	probeBadImm         = "Invalid immediate value"
	probeImmstrNoClose  = "String is not closed with '\"'"
	probeFileOnKprobe   = "File offset is not available with kprobe"
	probeBadFileOffs    = "Invalid file offset value"
	probeSymOnUprobe    = "Symbol is not available with uprobe"
	probeTooManyOps     = "Dereference is too much nested"
	probeDerefNeedBrace = "Dereference needs a brace"
	probeBadDerefOffs   = "Invalid dereference offset"
	probeDerefOpenBrace = "Dereference brace is not closed"
	probeCommCantDeref  = "$comm can not be dereferenced"
	probeBadFetchArg    = "Invalid fetch argument"
	probeArrayNoClose   = "Array is not closed"
	probeBadArraySuffix = "Array has wrong suffix"
	probeBadArrayNum    = "Invalid array size"
	probeArrayTooBig    = "Array number is too big"
	probeBadType        = "Unknown type is specified"
	probeBadString      = "String accepts only memory argument"
	probeBadSymString   = "Symbol String doesn't accept data/userdata"
	probeBadBitfield    = "Invalid bitfield"
	probeArgNameTooLong = "Argument name is too long"
	probeNoArgName      = "Argument name is not specified"
	probeBadArgName     = "Argument name must follow the same rules as C identifiers"
	probeUsedArgName    = "This argument name is already used"
	probeArgTooLong     = "Argument expression is too long"
	probeNoArgBody      = "No argument expression"
	probeNoFentryArgs   = "$arg* can be used only on function entry or exit"
	probeNoSupBTFArg    = "BTF is not available or not supported"
	probeNeedString     = "$comm and immediate-string only accepts string type"
	probeTooManyArgs    = "Too many arguments are specified"
	probeDiffProbeType  = "Probe type is different from existing probe"
	probeDiffArgType    = "Argument type or name is different from existing probe"
	probeSameProbe      = "There is already the exact same probe event"
)

// The kernel's words for a probe's place that is not on the system, for
// the checks that look (catalog.CheckProbe).
const (
	ProbeFileNotFound  = probeFileNotFound
	ProbeNoRegularFile = probeNoRegularFile
	ProbeBadProbeAddr  = probeBadProbeAddr
	ProbeNonUniqSymbol = probeNonUniqSymbol
)

// The kernel's limits on a probe definition.
const (
	// ProbeArgsMax is the most arguments a probe has (MAX_TRACE_ARGS).
	ProbeArgsMax = 128
	// ProbeMaxactiveMax is the largest maxactive (KRETPROBE_MAXACTIVE_MAX).
	ProbeMaxactiveMax = 4096
	// probeNameMax is the size of the kernel's event and group name
	// buffers (MAX_EVENT_NAME_LEN): names are shorter.
	probeNameMax = 64
	// probeArgNameMax is the longest argument name (MAX_ARG_NAME_LEN).
	probeArgNameMax = 32
	// probeArgStrMax is the longest argument expression (MAX_ARGSTR_LEN).
	probeArgStrMax = 63
	// probeInsnMax is the fetch instructions of one argument, the last
	// one the end (FETCH_INSN_MAX).
	probeInsnMax = 16
	// probeArrayMax is the largest array (MAX_ARRAY_LEN).
	probeArrayMax = 64
	// probeStackMax is the largest $stackN and $argN on a kprobe
	// (PARAM_MAX_STACK: a 16 KiB kernel stack in 8-byte words).
	probeStackMax = 2048
)

// The default systems of probe events.
const (
	KprobeSystem = "kprobes"
	UprobeSystem = "uprobes"
)

// ProbeDef is one kprobe, kretprobe, uprobe or uretprobe command, as
// written to the kernel's kprobe_events, uprobe_events or dynamic_events
// (§8.1 of the grammar): a definition, or with Remove a removal.
type ProbeDef struct {
	Src    string
	Remove bool // "-:[GRP/]EV": remove the events of that name
	User   bool // a uprobe (the place is PATH:...)
	Return bool // a kretprobe or uretprobe

	Group, Event       string
	GroupOff, EventOff int  // where the names are in Src; -1 when not given
	DefaultName        bool // Event was made from the place

	MaxActive int // r<N>: kretprobe instances (0: the kernel's default)

	// A kprobe's place: Symbol (with "MOD:" when given) and Offset, or
	// an address.
	Symbol string
	Offset uint64
	Addr   uint64
	IsAddr bool

	// A uprobe's place: Path and FileOffset, or (gtrace) PathSymbol and
	// SymbolOffset until Resolve sets FileOffset; RefCtr is the
	// reference counter's offset ("(REFCTR)"), 0 if none.
	Path         string
	FileOffset   uint64
	PathSymbol   string
	SymbolOffset uint64
	Resolved     bool // FileOffset is known (always, without PathSymbol)
	RefCtr       uint64

	PlaceOff, PlaceEnd int // the place's word in Src

	Args []ProbeArg

	arch string
}

// ProbeOptions are how to read a definition.
type ProbeOptions struct {
	// Arch is the architecture whose registers the definition names, as
	// GOARCH spells it ("amd64", "arm64"); "" is the machine's.
	Arch string
}

// probeWord is one blank-separated word of a definition.
type probeWord = synthWord

// FullName returns "group:event".
func (d *ProbeDef) FullName() string { return d.Group + ":" + d.Event }

// kindName is what the kernel calls the probe's kind in its errors.
func (d *ProbeDef) kindName() string {
	if d.User {
		return "uprobe"
	}
	return "kprobe"
}

// ParseProbe parses one probe command, as the kernel's kprobe_events
// and uprobe_events take it: p[:[GRP/]EV] PLACE [ARG...],
// r[MAXACTIVE][:[GRP/]EV] PLACE [ARG...], or -:[GRP/]EV. A place with a
// '/' is a uprobe's (PATH:OFFSET), any other a kprobe's. It accepts what
// the kernel accepts, with the kernel's names and defaults, and refuses the
// rest with the kernel's message and the caret on the token that is wrong
// (docs/probes.md says where gtrace is stricter, and what it takes beyond
// the kernel: uprobes at PATH:SYMBOL[+OFF], $argN on uprobes). It does not
// look at the system: catalog checks the place (kallsyms, the file) and
// resolves PATH:SYMBOL. name names the input in errors.
func ParseProbe(name, src string, opt ProbeOptions) (*ProbeDef, error) {
	arch := opt.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	if _, ok := probeRegs[arch]; !ok {
		return nil, Errorf(name, src, 0, len(src), "probes on %s are not supported", arch).
			WithHint("gtrace knows the registers of %s", strings.Join(probeArchs(), " and "))
	}
	p := &probeParser{name: name, src: src, d: &ProbeDef{Src: src, GroupOff: -1, EventOff: -1, arch: arch}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.d, nil
}

type probeParser struct {
	name string
	src  string
	d    *ProbeDef
	ws   []probeWord
}

func (p *probeParser) errf(off, end int, msg string) *Error {
	return Errorf(p.name, p.src, off, end, "%s", msg)
}

// wordErr is an error on a word from the byte at (in the word) to its end.
func (p *probeParser) wordErr(w probeWord, at int, msg string) *Error {
	return p.errf(w.off+at, w.off+len(w.s), msg)
}

const probeDefHint = "a probe is p[:[GRP/]EV] SYMBOL[+OFFS] [ARG...], r[:[GRP/]EV] SYMBOL [ARG...], or p[:[GRP/]EV] PATH:OFFSET [ARG...] for a uprobe"

func (p *probeParser) parse() error {
	p.ws = synthWords(p.src, 0, len(p.src))
	if len(p.ws) == 0 {
		return p.errf(0, len(p.src), "no probe definition").WithHint("%s", probeDefHint)
	}
	cmd := p.ws[0]
	d := p.d
	switch cmd.s[0] {
	case '-':
		return p.parseRemove(cmd)
	case 'p':
	case 'r':
		d.Return = true
	default:
		return p.errf(cmd.off, cmd.off+1, "a probe command starts with p, r or -:").WithHint("%s", probeDefHint)
	}
	if len(p.ws) < 2 {
		return p.errf(cmd.off+len(cmd.s), cmd.off+len(cmd.s), "no probe place").WithHint("%s", probeDefHint)
	}
	place := p.ws[1]
	d.User = strings.IndexByte(place.s, '/') >= 0
	d.PlaceOff, d.PlaceEnd = place.off, place.off+len(place.s)
	// What follows 'p' or 'r': maxactive digits (kretprobes), then ':'
	// and the names. The kernel skips anything else; gtrace refuses it.
	head := cmd.s[1:]
	colon := strings.IndexByte(head, ':')
	digits := head
	if colon >= 0 {
		digits = head[:colon]
	}
	if digits != "" {
		if !isDigit(digits[0]) {
			return p.errf(cmd.off+1, cmd.off+1+len(digits), "a probe command is p or r[MAXACTIVE], then :[GRP/]EV").WithHint("%s", probeDefHint)
		}
		if err := p.parseMaxactive(cmd, digits); err != nil {
			return err
		}
	}
	if d.User {
		if len(p.ws)-2 > ProbeArgsMax {
			w := p.ws[2]
			return p.errf(w.off, w.off+len(w.s), probeTooManyArgs).WithHint("a probe has at most %d arguments", ProbeArgsMax)
		}
		if err := p.parseUprobePlace(place); err != nil {
			return err
		}
	} else if err := p.parseKprobePlace(place); err != nil {
		return err
	}
	if colon >= 0 {
		if err := p.parseNames(cmd, 1+colon+1, true); err != nil {
			return err
		}
	}
	if d.Group == "" {
		d.Group = KprobeSystem
		if d.User {
			d.Group = UprobeSystem
		}
	}
	if d.Event == "" {
		d.Event, d.DefaultName = d.defaultName(), true
	}
	if !d.User && len(p.ws)-2 > ProbeArgsMax {
		w := p.ws[2]
		return p.errf(w.off, w.off+len(w.s), probeTooManyArgs).WithHint("a probe has at most %d arguments", ProbeArgsMax)
	}
	for i, w := range p.ws[2:] {
		a, err := p.parseArg(w, i)
		if err != nil {
			return err
		}
		d.Args = append(d.Args, a)
	}
	return nil
}

// parseMaxactive parses r<N> (the kernel's kstrtouint, base 0).
func (p *probeParser) parseMaxactive(cmd probeWord, digits string) error {
	at := cmd.off + 1
	if !p.d.Return {
		return p.errf(at, at+len(digits), probeBadMaxactType).WithHint("p probes a function's entry: r<N> sets how many returns a kretprobe can wait for at once")
	}
	if p.d.User {
		return p.errf(at, at+len(digits), "maxactive is not available with uprobe").
			WithHint("the kernel ignores it on a uretprobe: write r:[GRP/]EV PATH:OFFSET")
	}
	n, ok := kernelUint(digits)
	if len(digits) > probeNameMax-1 || !ok || n == 0 {
		return p.errf(at, at+len(digits), probeBadMaxact).WithHint("maxactive is a number from 1 to %d", ProbeMaxactiveMax)
	}
	if n > ProbeMaxactiveMax {
		return p.errf(at, at+len(digits), probeMaxactTooBig).WithHint("maxactive is a number from 1 to %d", ProbeMaxactiveMax)
	}
	p.d.MaxActive = int(n)
	return nil
}

// parseRemove parses -:[GRP/]EV.
func (p *probeParser) parseRemove(cmd probeWord) error {
	if len(cmd.s) < 2 || cmd.s[1] != ':' {
		return p.errf(cmd.off, cmd.off+len(cmd.s), "a removal is -:[GRP/]EV").WithHint("%s", probeDefHint)
	}
	p.d.Remove = true
	if len(p.ws) > 1 {
		w := p.ws[1]
		return p.errf(w.off, p.ws[len(p.ws)-1].off+len(p.ws[len(p.ws)-1].s), "a removal names an event and nothing else").
			WithHint("write -:[GRP/]EV: gtrace removes every probe of that event")
	}
	if err := p.parseNames(cmd, 2, false); err != nil {
		return err
	}
	if p.d.Event == "" {
		return p.errf(cmd.off+len(cmd.s), cmd.off+len(cmd.s), probeNoEventName).WithHint("write -:[GRP/]EV")
	}
	return nil
}

// parseNames parses [GRP/]EV (or GRP.EV) from cmd.s[at:], as the
// kernel's traceprobe_parse_event_name: a group with an empty event
// leaves the event to its default when def.
func (p *probeParser) parseNames(cmd probeWord, at int, def bool) error {
	d := p.d
	ev := cmd.s[at:]
	off := cmd.off + at
	slash := strings.IndexByte(ev, '/')
	if slash < 0 {
		slash = strings.IndexByte(ev, '.')
	}
	if slash >= 0 {
		grp := ev[:slash]
		switch {
		case slash == 0:
			return p.errf(off, off+1, probeNoGroupName).WithHint("write GRP/EV, or EV alone for group %s", d.defaultGroup())
		case slash+1 > probeNameMax:
			return p.errf(off, off+slash, probeGroupTooLong).WithHint("a group name has at most %d characters", probeNameMax-2)
		case !isGoodSystemName(grp):
			return p.errf(off, off+slash, probeBadGroupName).WithHint("a group name is letters, digits, '_' and '-', and does not start with a digit or '-'")
		}
		d.Group, d.GroupOff = grp, off
		ev = ev[slash+1:]
		off += slash + 1
	}
	switch {
	case ev == "" && slash >= 0 && def:
		return nil
	case ev == "":
		return p.errf(off, off, probeNoEventName).WithHint("write :[GRP/]EV, or leave the ':' out for the default name")
	case len(ev) >= probeNameMax:
		return p.errf(off, off+len(ev), probeEventTooLong).WithHint("an event name has at most %d characters", probeNameMax-1)
	case !IsGoodName(ev):
		return p.errf(off, off+len(ev), probeBadEventName).WithHint("%s", synthNameHint)
	}
	d.Event, d.EventOff = ev, off
	return nil
}

func (d *ProbeDef) defaultGroup() string {
	if d.User {
		return UprobeSystem
	}
	return KprobeSystem
}

// isGoodSystemName is the kernel's is_good_system_name: a name that may
// also have '-'.
func isGoodSystemName(s string) bool {
	if s == "" || !(s[0] == '_' || isAlpha(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// parseKprobePlace parses [MOD:]SYM[+OFFS][%return] or ADDR.
func (p *probeParser) parseKprobePlace(w probeWord) error {
	d := p.d
	if n, ok := kstrtoull(w.s, 0); ok {
		d.Addr, d.IsAddr = n, true
		return nil
	}
	sym := w.s
	if pc := strings.IndexByte(sym, '%'); pc >= 0 {
		if sym[pc:] != "%return" {
			return p.errf(w.off+pc, w.off+len(w.s), probeBadAddrSuffix).WithHint("the only suffix is %%return, which makes a return probe")
		}
		sym = sym[:pc]
		d.Return = true
	}
	if pm := strings.IndexAny(sym, "+-"); pm >= 0 {
		off, ok := kstrtoll(sym[pm:], 0)
		if !ok || off < 0 || off > 1<<32-1 {
			return p.errf(w.off, w.off+len(w.s), probeBadProbeAddr).WithHint("a place is [MOD:]SYMBOL[+OFFSET] or an address")
		}
		d.Offset = uint64(off)
		sym = sym[:pm]
	}
	if sym == "" || strings.HasSuffix(sym, ":") || isDigit(sym[0]) {
		return p.errf(w.off, w.off+len(w.s), probeBadProbeAddr).WithHint("a place is [MOD:]SYMBOL[+OFFSET] or an address")
	}
	d.Symbol = sym
	if d.Return && d.Offset != 0 {
		return p.errf(w.off, w.off+len(w.s), probeBadRetprobe).WithHint("a return probe is at a function's entry: write %s", sym)
	}
	return nil
}

// parseUprobePlace parses PATH:OFFSET[%return][(REFCTR)], or (gtrace)
// PATH:SYMBOL[+OFFSET][%return][(REFCTR)].
func (p *probeParser) parseUprobePlace(w probeWord) error {
	d := p.d
	colon := strings.LastIndexByte(w.s, ':')
	if colon < 0 {
		return p.errf(w.off, w.off+len(w.s), probeBadUprobeOffs).
			WithHint("a uprobe's place is PATH:OFFSET or PATH:SYMBOL[+OFFSET]")
	}
	d.Path = w.s[:colon]
	arg := w.s[colon+1:]
	argOff := colon + 1
	if rc := strings.IndexByte(arg, '('); rc >= 0 {
		end := strings.IndexByte(arg[rc:], ')')
		if end < 0 {
			return p.wordErr(w, len(w.s), probeRefcntOpen).WithHint("write (OFFSET) after the place")
		}
		end += rc
		if end != len(arg)-1 {
			return p.wordErr(w, argOff+end+1, probeBadRefcntSfx).WithHint("nothing follows the reference counter's (OFFSET)")
		}
		n, ok := kstrtoull(arg[rc+1:end], 0)
		if !ok {
			return p.errf(w.off+argOff+rc+1, w.off+argOff+end, probeBadRefcnt).WithHint("the reference counter's offset is a number")
		}
		d.RefCtr = n
		arg = arg[:rc]
	}
	if pc := strings.IndexByte(arg, '%'); pc >= 0 {
		if arg[pc:] != "%return" {
			return p.errf(w.off+argOff+pc, w.off+argOff+len(arg), probeBadAddrSuffix).WithHint("the only suffix is %%return, which makes a return probe")
		}
		d.Return = true
		arg = arg[:pc]
	}
	if arg != "" && isDigit(arg[0]) {
		n, ok := kstrtoull(arg, 0)
		if !ok {
			return p.errf(w.off+argOff, w.off+argOff+len(arg), probeBadUprobeOffs).WithHint("the offset is a number, in the file")
		}
		d.FileOffset, d.Resolved = n, true
		return nil
	}
	// gtrace: a symbol of the file, resolved from its symbol table.
	sym := arg
	if pm := strings.IndexByte(arg, '+'); pm >= 0 {
		n, ok := kstrtoull(arg[pm+1:], 0)
		if !ok {
			return p.errf(w.off+argOff+pm, w.off+argOff+len(arg), probeBadUprobeOffs).WithHint("a place is PATH:SYMBOL+OFFSET, the offset a number")
		}
		d.SymbolOffset = n
		sym = arg[:pm]
	}
	if !isSymbolName(sym) {
		return p.errf(w.off+argOff, w.off+argOff+len(arg), probeBadUprobeOffs).
			WithHint("a uprobe's place is PATH:OFFSET or PATH:SYMBOL[+OFFSET]")
	}
	d.PathSymbol = sym
	return nil
}

// isSymbolName reports whether s can be an ELF symbol in a place: a C
// name, or with '.', '@' and '$' as compilers write them.
func isSymbolName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) && s[i] != '.' && s[i] != '@' && s[i] != '$' {
			return false
		}
	}
	return true
}

// defaultName is the event name the kernel gives a probe without one:
// p_SYM_OFFS or r_SYM_OFFS for a kprobe (anything but letters, digits and
// '_' made '_'), p_0xADDR at an address (the kernel writes a hashed
// pointer there; gtrace the address), and for a uprobe p_BASE_0xOFFSET,
// BASE the file's name up to its first '.', '-' or '_' — r_ for a
// uretprobe, and p_BASE_SYMBOL[_OFFSET] at a symbol, where gtrace departs
// from the kernel (which writes p_ for both, so that they collide).
func (d *ProbeDef) defaultName() string {
	c := "p"
	if d.Return {
		c = "r"
	}
	var s string
	switch {
	case d.User:
		base := d.Path[strings.LastIndexByte(d.Path, '/')+1:]
		if i := strings.IndexAny(base, ".-_"); i >= 0 {
			base = base[:i]
		}
		if d.PathSymbol != "" {
			s = fmt.Sprintf("%s_%s_%s", c, base, d.PathSymbol)
			if d.SymbolOffset != 0 {
				s += fmt.Sprintf("_%d", d.SymbolOffset)
			}
		} else {
			s = fmt.Sprintf("%s_%s_0x%x", c, base, d.FileOffset)
		}
	case d.IsAddr:
		s = fmt.Sprintf("%s_0x%016x", c, d.Addr)
	default:
		s = fmt.Sprintf("%s_%s_%d", c, d.Symbol, d.Offset)
	}
	b := []byte(s)
	for i := range b {
		if !isIdentByte(b[i]) {
			b[i] = '_'
		}
	}
	if len(b) > probeNameMax-1 {
		b = b[:probeNameMax-1]
	}
	return string(b)
}

// kstrtoull parses s as the kernel's kstrtoull: an optional '+', then
// with base 0 hex after 0x, octal after 0, else decimal; all of s.
func kstrtoull(s string, base int) (uint64, bool) {
	s = strings.TrimPrefix(s, "+")
	return kparseull(s, base)
}

// kparseull is the kernel's _kstrtoull: no sign.
func kparseull(s string, base int) (uint64, bool) {
	if base == 0 {
		switch {
		case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHexDigit(s[2]):
			s, base = s[2:], 16
		case len(s) > 0 && s[0] == '0':
			base = 8
		default:
			base = 10
		}
	} else if base == 16 && len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		var v uint64
		switch {
		case c >= '0' && c <= '9':
			v = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			v = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if v >= uint64(base) {
			return 0, false
		}
		if n > (^uint64(0)-v)/uint64(base) {
			return 0, false
		}
		n = n*uint64(base) + v
	}
	return n, true
}

// kstrtoll parses s as the kernel's kstrtoll.
func kstrtoll(s string, base int) (int64, bool) {
	if strings.HasPrefix(s, "-") {
		n, ok := kparseull(s[1:], base)
		if !ok || n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	n, ok := kstrtoull(s, base)
	if !ok || n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
