package parse

import (
	"strconv"
	"strings"
)

// ProbeArg is one argument of a probe: [NAME=]FETCHARG[:TYPE].
type ProbeArg struct {
	Name        string
	DefaultName bool   // Name is arg<N>
	Comm        string // the text after NAME=, as the kernel lists it
	Off, End    int    // the argument's word in the definition
	BodyOff     int    // where Comm starts
	Fetch       *Fetch
	Type        *ProbeType
	TypeOff     int // where the type's word starts; -1 without one
	Count       int // an array's length, 0 for a single value
	// A bitfield b<Width>@<Offset>/<container bits>; Width 0 for none.
	BitWidth, BitOffset int
}

// ProbeType is a fetch type: how an argument is stored and printed.
type ProbeType struct {
	Name      string // as written: "u32", "x64", "string", "symbol", "char"
	Size      int    // bytes in the record (4 for a string's __data_loc)
	Signed    bool   // the format's signed: flag
	FieldType string // the format's type: "u32", "s64", "__data_loc char[]"
	Fmt       string // the print fmt conversion: "%u", "0x%Lx", "\"%s\""
	String    bool   // a __data_loc string
}

// probeTypes are the kernel's fetch types (probe_fetch_types) on a 64-bit
// machine; symbol and symstr are for kprobes only.
var probeTypes = map[string]*ProbeType{
	"u8":      {"u8", 1, false, "u8", "%u", false},
	"u16":     {"u16", 2, false, "u16", "%u", false},
	"u32":     {"u32", 4, false, "u32", "%u", false},
	"u64":     {"u64", 8, false, "u64", "%Lu", false},
	"s8":      {"s8", 1, true, "s8", "%d", false},
	"s16":     {"s16", 2, true, "s16", "%d", false},
	"s32":     {"s32", 4, true, "s32", "%d", false},
	"s64":     {"s64", 8, true, "s64", "%Ld", false},
	"x8":      {"x8", 1, false, "u8", "0x%x", false},
	"x16":     {"x16", 2, false, "u16", "0x%x", false},
	"x32":     {"x32", 4, false, "u32", "0x%x", false},
	"x64":     {"x64", 8, false, "u64", "0x%Lx", false},
	"char":    {"char", 1, false, "u8", "'%c'", false},
	"symbol":  {"symbol", 8, false, "u64", "%pS", false},
	"string":  {"string", 4, true, "__data_loc char[]", `\"%s\"`, true},
	"ustring": {"ustring", 4, true, "__data_loc char[]", `\"%s\"`, true},
	"symstr":  {"symstr", 4, true, "__data_loc char[]", `\"%s\"`, true},
}

// probeTypeNames lists the types for hints.
var probeTypeNames = []string{"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "x8", "x16", "x32", "x64", "char", "string", "ustring", "symbol", "symstr"}

// FetchOp is what a fetch argument reads.
type FetchOp int

// Fetch operations.
const (
	FetchReg          FetchOp = iota // %REG
	FetchMem                         // @ADDR
	FetchSymbol                      // @SYM[+|-OFFS] (kprobe)
	FetchFileOffset                  // @+OFFS (uprobe)
	FetchStack                       // $stackN
	FetchStackPointer                // $stack
	FetchArg                         // $argN
	FetchRetval                      // $retval
	FetchComm                        // $comm
	FetchImm                         // \IMM
	FetchString                      // \"STRING"
	FetchDeref                       // +|-[u]OFFS(FETCHARG)
)

// Fetch is one fetch argument, a tree for dereferences.
type Fetch struct {
	Op       FetchOp
	Reg      string // FetchReg
	N        uint64 // FetchMem's address, FetchImm's value, FetchStack's and FetchArg's number
	Symbol   string // FetchSymbol
	Offset   int64  // FetchSymbol's, FetchFileOffset's and FetchDeref's offset
	Str      string // FetchString
	User     bool   // FetchDeref of user memory (+u)
	Inner    *Fetch // FetchDeref's address
	Off, End int    // in the definition
}

// last is the operation the kernel's fetch ends with: a memory fetch
// (FetchMem, FetchSymbol, FetchFileOffset) ends as a dereference does.
func (f *Fetch) last() FetchOp { return f.Op }

// argParser parses one argument as traceprobe_parse_probe_arg_body.
type argParser struct {
	p    *probeParser
	code int // the kernel's fetch instruction index
	// koff is the kernel's ctx->offset: where in the definition it
	// reports an error.
	koff int
}

func (p *probeParser) reserved(name string) bool {
	switch name {
	case "common_type", "common_flags", "common_preempt_count", "common_pid", "common_tgid",
		"__probe_ip", "__probe_ret_ip", "__probe_func":
		return true
	}
	return false
}

// isFunctionEntry reports whether the probe is where the kernel takes
// $argN: a kprobe at a symbol (offset 0), a kretprobe (from the entry),
// and in gtrace an entry uprobe.
func (d *ProbeDef) argsAvailable() bool {
	if d.User {
		return !d.Return
	}
	return d.Return || !d.IsAddr && d.Offset == 0
}

func (p *probeParser) parseArg(w probeWord, i int) (ProbeArg, error) {
	d := p.d
	a := ProbeArg{Off: w.off, End: w.off + len(w.s), TypeOff: -1}
	if eq := strings.IndexByte(w.s, '='); eq >= 0 {
		switch {
		case eq > probeArgNameMax:
			return a, p.errf(w.off, w.off+eq, probeArgNameTooLong).WithHint("an argument name has at most %d characters", probeArgNameMax)
		case eq == 0:
			return a, p.errf(w.off, w.off+1, probeNoArgName).WithHint("write NAME=FETCHARG, or FETCHARG alone for the name arg%d", i+1)
		}
		a.Name = w.s[:eq]
		a.BodyOff = w.off + eq + 1
	} else {
		// The kernel takes a bare name as a BTF variable, named by itself.
		a.Name, a.DefaultName = "arg"+strconv.Itoa(i+1), true
		if IsGoodName(w.s) {
			a.Name, a.DefaultName = w.s, false
		}
		a.BodyOff = w.off
	}
	if !IsGoodName(a.Name) {
		return a, p.errf(w.off, w.off+len(a.Name), probeBadArgName).WithHint("%s", synthNameHint)
	}
	used := p.reserved(a.Name)
	for _, b := range d.Args {
		used = used || b.Name == a.Name
	}
	if used {
		return a, p.errf(w.off, w.off+len(a.Name), probeUsedArgName).WithHint("each argument has a name of its own, and not one of the record's fields (common_*, __probe_ip, __probe_func, __probe_ret_ip)")
	}
	body := w.s[a.BodyOff-w.off:]
	a.Comm = body
	switch {
	case len(body) > probeArgStrMax:
		return a, p.errf(a.BodyOff, a.End, probeArgTooLong).WithHint("an argument's expression has at most %d characters", probeArgStrMax)
	case body == "":
		return a, p.errf(a.BodyOff, a.BodyOff, probeNoArgBody).WithHint("write NAME=FETCHARG[:TYPE]")
	}
	ap := &argParser{p: p, koff: a.BodyOff}
	return a, ap.parse(&a, body)
}

// parse parses an argument's body (after NAME=) into a.
func (ap *argParser) parse(a *ProbeArg, body string) error {
	p := ap.p
	base := a.BodyOff
	fetch, typ := body, ""
	hasType := false
	if c := strings.IndexByte(body, ':'); c >= 0 {
		fetch, typ, hasType = body[:c], body[c+1:], true
		a.TypeOff = base + c + 1
		if b := strings.IndexByte(typ, '['); b >= 0 {
			rest := typ[b+1:]
			restOff := a.TypeOff + b + 1
			cl := strings.IndexByte(rest, ']')
			switch {
			case cl < 0:
				return p.errf(restOff+len(rest), restOff+len(rest), probeArrayNoClose).WithHint("an array is TYPE[N]")
			case cl != len(rest)-1:
				return p.errf(restOff+cl+1, a.End, probeBadArraySuffix).WithHint("nothing follows an array's ']'")
			}
			n, ok := kernelUint(rest[:cl])
			if !ok || n == 0 {
				return p.errf(restOff, restOff+cl, probeBadArrayNum).WithHint("an array's length is a number from 1 to %d", probeArrayMax)
			}
			if n > probeArrayMax {
				return p.errf(restOff, restOff+cl, probeArrayTooBig).WithHint("an array's length is a number from 1 to %d", probeArrayMax)
			}
			a.Count = int(n)
			typ = typ[:b]
		}
	}
	typeOff := base
	if hasType {
		typeOff = a.TypeOff
	}
	typeEnd := typeOff + len(typ)
	if fetch == "$comm" || fetch == "$COMM" || strings.HasPrefix(fetch, `\"`) {
		if a.Count > 0 || hasType && typ != "string" {
			typeEnd = a.End
			return p.errf(typeOff, typeEnd, probeNeedString).WithHint("write %s:string, or no type", fetch)
		}
		a.Type = probeTypes["string"]
	} else {
		t, bw, bo, ok := findProbeType(typ, hasType, p.d.User)
		if !ok {
			e := p.errf(typeOff, typeOff+len(typ), probeBadType)
			switch {
			case p.d.User && (typ == "symbol" || typ == "symstr"):
				e.WithHint("%s is a kernel symbol: kprobes only", typ)
			case typ == "%pd" || typ == "%pD":
				e.WithHint("gtrace does not take %%pd and %%pD: fetch the name with +OFFS(...):string")
			default:
				if near := Nearest(typ, probeTypeNames); near != "" {
					e.WithHint("did you mean %q?", near)
				} else {
					e.WithHint("a type is one of %s, b<WIDTH>@<OFFSET>/<8|16|32|64>, or TYPE[N]", strings.Join(probeTypeNames, " "))
				}
			}
			return e
		}
		a.Type, a.BitWidth, a.BitOffset = t, bw, bo
	}
	f, err := ap.fetch(fetch, base)
	if err != nil {
		return err
	}
	a.Fetch = f
	// The store: strings need memory (or a string to copy), symstr an
	// address; a dereference becomes the store, anything else needs one
	// more instruction, as does an array's loop.
	last := f.last()
	more := func() error {
		ap.code++
		if ap.code >= probeInsnMax-1 {
			return p.errf(base, a.End, probeTooManyOps).WithHint("an argument has at most %d fetch steps", probeInsnMax-1)
		}
		return nil
	}
	if a.Type.String {
		if a.Type.Name == "symstr" {
			switch last {
			case FetchReg, FetchStack, FetchRetval, FetchArg, FetchDeref, FetchMem, FetchSymbol, FetchFileOffset:
			default:
				return p.errf(typeOff, typeEnd, probeBadSymString).WithHint("symstr prints the symbol at an address: fetch the address from a register, the stack, $argN, $retval or memory")
			}
		} else {
			switch last {
			case FetchDeref, FetchMem, FetchSymbol, FetchFileOffset, FetchImm, FetchComm, FetchString:
			default:
				return p.errf(typeOff, typeEnd, probeBadString).WithHint("a string is read from memory: +0(%s):%s", fetch, typ)
			}
		}
		if a.Type.Name == "symstr" || last == FetchImm || last == FetchComm || last == FetchString || a.Count > 0 {
			if err := more(); err != nil {
				return err
			}
		}
	} else if last != FetchDeref && last != FetchMem && last != FetchSymbol && last != FetchFileOffset {
		if err := more(); err != nil {
			return err
		}
	}
	// A dereference of user memory stores as the kernel's ST_UMEM, which
	// its array loop does not take.
	storeMem := last == FetchMem || last == FetchSymbol || last == FetchFileOffset || last == FetchDeref && !f.User
	if a.BitWidth != 0 {
		ap.code++
		if ap.code >= probeInsnMax-1 || a.BitWidth < 0 {
			return p.errf(typeOff, typeEnd, probeBadBitfield).WithHint("a bitfield is b<WIDTH>@<OFFSET>/<CONTAINER>, WIDTH from 1 and WIDTH+OFFSET at most the container's bits (8, 16, 32 or 64)")
		}
	}
	if a.Count > 0 {
		if a.Type.Name == "symstr" {
			return p.errf(typeOff, a.End, probeBadString).WithHint("symstr has no arrays: one address per argument, as %s:symstr", fetch)
		}
		if !storeMem && !a.Type.String {
			return p.errf(typeOff, a.End, probeBadString).WithHint("an array is read from memory: +0(%s):%s", fetch, typ)
		}
		if err := more(); err != nil {
			return err
		}
	}
	return nil
}

// findProbeType is the kernel's find_fetch_type: the default x64, a
// bitfield b<W>@<O>/<container bits> as its container (width, offset
// and container checked as the kernel does), or a type by name.
func findProbeType(t string, given, user bool) (pt *ProbeType, width, off int, ok bool) {
	if !given {
		return probeTypes["x64"], 0, 0, true
	}
	if user && (t == "symbol" || t == "symstr") {
		return nil, 0, 0, false
	}
	if strings.HasPrefix(t, "b") {
		slash := strings.IndexByte(t, '/')
		if slash < 0 {
			return nil, 0, 0, false
		}
		bs, good := kstrtoull(t[slash+1:], 0)
		if !good {
			return nil, 0, 0, false
		}
		var c string
		switch bs {
		case 8, 16, 32, 64:
			c = "u" + strconv.Itoa(int(bs))
		default:
			return nil, 0, 0, false
		}
		w, o, good := parseBitfield(t[1:slash])
		if !good || w+o > int(bs) {
			// The kernel finds the type, then refuses the bitfield.
			return probeTypes[c], -1, 0, true
		}
		return probeTypes[c], w, o, true
	}
	pt, ok = probeTypes[t]
	return pt, 0, 0, ok
}

// parseBitfield parses "W@O" as the kernel's simple_strtoul does (base
// 0, digits as far as they go).
func parseBitfield(s string) (w, o int, ok bool) {
	at := strings.IndexByte(s, '@')
	if at < 0 {
		return 0, 0, false
	}
	wv, good := kstrtoull(s[:at], 0)
	if !good || wv == 0 || wv > 64 {
		return 0, 0, false
	}
	ov, good := kstrtoull(s[at+1:], 0)
	if !good || ov > 64 {
		return 0, 0, false
	}
	return int(wv), int(ov), true
}

// fetch parses a fetch argument s that starts at off in the definition,
// as the kernel's parse_probe_arg.
func (ap *argParser) fetch(s string, off int) (*Fetch, error) {
	p := ap.p
	d := p.d
	f := &Fetch{Off: off, End: off + len(s)}
	errAt := func(msg string) *Error { return p.errf(off, off+len(s), msg) }
	next := func() error {
		ap.code++
		if ap.code == probeInsnMax-1 {
			return errAt(probeTooManyOps).WithHint("an argument has at most %d fetch steps", probeInsnMax-1)
		}
		return nil
	}
	if s == "" {
		return nil, errAt(probeBadFetchArg).WithHint("%s", probeFetchHint)
	}
	switch s[0] {
	case '$':
		return f, ap.vars(f, s)
	case '%':
		reg := s[1:]
		if !probeRegs[d.arch][reg] {
			e := errAt(probeBadRegName)
			if near := Nearest(reg, probeRegNames(d.arch)); near != "" {
				return nil, e.WithHint("did you mean %%%s?", near)
			}
			return nil, e.WithHint("the registers of %s are %s", d.arch, strings.Join(probeRegNames(d.arch), " "))
		}
		f.Op, f.Reg = FetchReg, reg
		return f, nil
	case '@':
		switch {
		case len(s) > 1 && isDigit(s[1]):
			n, ok := kstrtoull(s[1:], 0)
			if !ok {
				return nil, errAt(probeBadMemAddr).WithHint("@ADDR is an address, a number")
			}
			f.Op, f.N = FetchMem, n
		case len(s) > 1 && s[1] == '+':
			if !d.User {
				return nil, errAt(probeFileOnKprobe).WithHint("@+OFFSET is an offset in a uprobe's file")
			}
			n, ok := kstrtoll(s[2:], 0)
			if !ok {
				return nil, errAt(probeBadFileOffs).WithHint("@+OFFSET is a number")
			}
			f.Op, f.Offset = FetchFileOffset, n
		default:
			if d.User {
				return nil, errAt(probeSymOnUprobe).WithHint("a uprobe reads memory at @ADDR or @+FILE_OFFSET")
			}
			sym := s[1:]
			if pm := strings.IndexAny(sym, "+-"); pm >= 0 {
				n, ok := kstrtoll(sym[pm:], 0)
				if !ok {
					return nil, errAt(probeBadFetchArg).WithHint("write @SYMBOL+OFFSET, the offset a number")
				}
				f.Offset = n
				sym = sym[:pm]
			}
			if sym == "" {
				return nil, errAt(probeBadFetchArg).WithHint("write @SYMBOL[+OFFSET]")
			}
			f.Op, f.Symbol = FetchSymbol, sym
			if err := next(); err != nil {
				return nil, err
			}
		}
		return f, next()
	case '+', '-':
		rest := s
		user := len(s) > 1 && s[1] == 'u'
		if user {
			rest = s[:1] + s[2:]
		}
		num := strings.TrimPrefix(rest, "+")
		paren := strings.IndexByte(num, '(')
		if paren < 0 {
			return nil, errAt(probeDerefNeedBrace).WithHint("a dereference is +OFFSET(FETCHARG)")
		}
		n, ok := kstrtoll(num[:paren], 0)
		if !ok {
			return nil, errAt(probeBadDerefOffs).WithHint("a dereference is +OFFSET(FETCHARG), the offset a number")
		}
		// The inner argument, from after '(' (in s) to the last ')'.
		open := strings.IndexByte(s, '(')
		inner := s[open+1:]
		innerOff := off + open + 1
		ap.koff = innerOff
		cl := strings.LastIndexByte(inner, ')')
		if cl < 0 {
			return nil, p.errf(innerOff+len(inner), innerOff+len(inner), probeDerefOpenBrace).WithHint("close the dereference with ')'")
		}
		if cl != len(inner)-1 {
			// The kernel ignores what follows the last ')'.
			return nil, p.errf(innerOff+cl+1, off+len(s), probeBadFetchArg).WithHint("nothing follows a dereference's ')' but :TYPE")
		}
		in, err := ap.fetch(inner[:cl], innerOff)
		if err != nil {
			return nil, err
		}
		if in.Op == FetchComm || in.Op == FetchString {
			return nil, p.errf(innerOff, innerOff+cl, probeCommCantDeref).WithHint("$comm and immediate strings are strings: use them without a dereference")
		}
		if ap.code+1 == probeInsnMax-1 {
			return nil, p.errf(innerOff, innerOff+cl, probeTooManyOps).WithHint("an argument has at most %d fetch steps", probeInsnMax-1)
		}
		ap.code++
		f.Op, f.Offset, f.User, f.Inner = FetchDeref, n, user, in
		return f, nil
	case '\\':
		if len(s) > 1 && s[1] == '"' {
			str := s[2:]
			if str == "" || str[len(str)-1] != '"' {
				return nil, p.errf(off+len(s), off+len(s), probeImmstrNoClose).WithHint(`an immediate string is \"TEXT"`)
			}
			f.Op, f.Str = FetchString, str[:len(str)-1]
			return f, nil
		}
		v, ok := kernelImmediate(s[1:])
		if !ok {
			return nil, p.errf(off+1, off+len(s), probeBadImm).WithHint(`an immediate is \NUMBER, or \"TEXT" for a string`)
		}
		f.Op, f.N = FetchImm, v
		return f, nil
	}
	if isAlpha(s[0]) || s[0] == '_' {
		return nil, errAt(probeNoSupBTFArg).WithHint("gtrace does not read arguments by their BTF names: use $argN, a register or memory")
	}
	return nil, errAt(probeBadFetchArg).WithHint("%s", probeFetchHint)
}

const probeFetchHint = `a fetch argument is %REG, @ADDR, @SYM[+OFFS], @+OFFS, $stackN, $stack, $argN, $retval, $comm, +|-[u]OFFS(FETCHARG), \IMM or \"STRING"`

// kernelImmediate is the kernel's str_to_immediate.
func kernelImmediate(s string) (uint64, bool) {
	switch {
	case s != "" && isDigit(s[0]):
		return kstrtoull(s, 0)
	case strings.HasPrefix(s, "-"):
		n, ok := kstrtoll(s, 0)
		return uint64(n), ok
	case strings.HasPrefix(s, "+"):
		n, ok := kstrtoll(s[1:], 0)
		return uint64(n), ok
	}
	return 0, false
}

// vars parses a $-variable, as the kernel's parse_probe_vars.
func (ap *argParser) vars(f *Fetch, s string) error {
	p := ap.p
	d := p.d
	errAt := func(msg string) *Error { return p.errf(f.Off, f.End, msg) }
	v := s[1:]
	switch {
	case v == "retval":
		if !d.Return {
			return errAt(probeRetvalOnProbe).WithHint("$retval is for return probes: r:[GRP/]EV PLACE")
		}
		f.Op = FetchRetval
		return nil
	case strings.HasPrefix(v, "stack"):
		n := v[len("stack"):]
		if n == "" {
			f.Op = FetchStackPointer
			return nil
		}
		if !isDigit(n[0]) {
			return errAt(probeBadVar).WithHint("$stack is the stack pointer, $stackN the Nth word on the stack")
		}
		k, ok := kparseull(n, 10)
		if !ok {
			return errAt(probeBadVar).WithHint("$stackN takes a decimal N")
		}
		if !d.User && k > probeStackMax {
			return errAt(probeBadStackNum).WithHint("$stackN takes N from 0 to %d", probeStackMax)
		}
		f.Op, f.N = FetchStack, k
		return nil
	case v == "comm" || v == "COMM":
		f.Op = FetchComm
		return nil
	case strings.HasPrefix(v, "arg"):
		k, ok := kstrtoull(v[len("arg"):], 10)
		if !ok {
			if v == "arg*" {
				return errAt(probeNoSupBTFArg).WithHint("gtrace does not read arguments by their BTF names: list them, $arg1 $arg2 ...")
			}
			return errAt(probeBadVar).WithHint("$argN takes a decimal N from 1")
		}
		if k == 0 || k > probeStackMax {
			return errAt(probeBadArgNum).WithHint("$argN takes N from 1 to %d", probeStackMax)
		}
		if !d.argsAvailable() {
			hint := "a kprobe has its arguments at a function's entry (SYMBOL, no offset) and in a kretprobe"
			if d.User {
				hint = "a uretprobe has no arguments: the registers that held them are not kept; gtrace reads $argN at a uprobe's entry"
			}
			return errAt(probeNoFentryArgs).WithHint("%s", hint)
		}
		if d.User {
			if _, ok := probeArgReg(d.arch, int(k)); !ok {
				return errAt(probeBadArgNum).WithHint("$argN on a uprobe is a register or a stack word of the calling convention; N is at most %d", probeUserArgsMax)
			}
		}
		f.Op, f.N = FetchArg, k
		return nil
	}
	return errAt(probeBadVar).WithHint("the $-variables are $retval, $stack, $stackN, $argN and $comm")
}
