package report

import (
	"strconv"
)

// handler prints a record the way one of trace-cmd's plugins does. It
// reports whether the event's print fmt output should follow (plugins
// that only add a prefix, or that give up).
type handler func(p *printer, b []byte, r *rec) ([]byte, bool)

// handlerFor returns the event handler of the plugins trace-cmd 3.1.6
// loads by default (libtraceevent 1.7's sched_switch, kmem, hrtimer,
// futex, tlb, function and kvm plugins) and of trace-cmd's own function
// graph printer, or nil.
func (p *printer) handlerFor(ev *event) handler {
	switch ev.full {
	case "sched:sched_switch":
		return schedSwitch
	case "sched:sched_wakeup", "sched:sched_wakeup_new":
		return schedWakeup
	case "kmem:kfree", "kmem:kmalloc", "kmem:kmalloc_node", "kmem:kmem_cache_alloc", "kmem:kmem_cache_alloc_node", "kmem:kmem_cache_free":
		return callSite
	case "timer:hrtimer_expire_entry":
		return hrtimerExpire
	case "timer:hrtimer_start":
		return hrtimerStart
	case "syscalls:sys_enter_futex":
		return futex
	case "tlb:tlb_flush":
		return tlbFlush
	case "ftrace:function":
		return function
	case "ftrace:kernel_stack":
		return kernelStack
	case "ftrace:raw_data":
		return rawData
	case "ftrace:funcgraph_entry":
		return fgraphEntry
	case "ftrace:funcgraph_exit":
		return fgraphExit
	case "ftrace:func_repeats":
		return funcRepeats
	case "kvm:kvm_exit":
		return kvmExit
	case "kvm:kvm_entry":
		return kvmEntry
	case "kvm:kvm_emulate_insn":
		return kvmEmulateInsn
	case "kvm:kvm_nested_vmexit":
		return kvmNestedVMExit
	case "kvm:kvm_nested_vmexit_inject":
		return kvmNestedVMExitInject
	case "kvmmmu:kvm_mmu_get_page":
		return kvmMMUGetPage
	case "kvmmmu:kvm_mmu_sync_page", "kvmmmu:kvm_mmu_unsync_page", "kvmmmu:kvm_mmu_zap_page", "kvmmmu:kvm_mmu_prepare_zap_page":
		return kvmMMURole
	}
	return nil
}

// fieldVal is tep_get_field_val: the value of one of the event's own
// fields; with complain, a missing field prints "<CANT FIND FIELD name>"
// and an odd-sized one " name=INVALID".
func (p *printer) fieldVal(b []byte, r *rec, name string, complain bool) ([]byte, uint64, bool) {
	f := r.ev.findField(name)
	if f == nil {
		if complain {
			b = append(b, "<CANT FIND FIELD "...)
			b = append(b, name...)
			b = append(b, '>')
		}
		return b, 0, false
	}
	switch f.size {
	case 1, 2, 4, 8:
	default:
		if complain {
			b = append(b, ' ')
			b = append(b, name...)
			b = append(b, "=INVALID"...)
		}
		return b, 0, false
	}
	return b, p.readNum(r.data, f.offset, f.size), true
}

// saveComm prints a comm field ("%.*s") and teaches the comm to the pid.
func (p *printer) saveComm(b []byte, r *rec, f *field, pid uint64) []byte {
	comm := cstr(clip(r.data, f.offset, f.size))
	b = append(b, comm...)
	p.comms.register(int32(pid), comm)
	return b
}

// schedSwitch: "prev_comm:prev_pid [prio] S ==> next_comm:next_pid [prio]".
func schedSwitch(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, pid, ok := p.fieldVal(b, r, "prev_pid", true)
	if !ok {
		return append(b, '!'), true
	}
	if f := r.ev.findAnyField("prev_comm"); f != nil {
		b = p.saveComm(b, r, f, pid)
		b = append(b, ':')
	}
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, ' ')
	var v uint64
	if b, v, ok = p.fieldVal(b, r, "prev_prio", true); ok {
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(int32(v)), 10)
		b = append(b, "] "...)
	}
	if b, v, ok = p.fieldVal(b, r, "prev_state", true); ok {
		b = appendTaskState(b, int32(v))
	}
	b = append(b, " ==> "...)
	if b, pid, ok = p.fieldVal(b, r, "next_pid", true); !ok {
		return append(b, '!'), true
	}
	if f := r.ev.findAnyField("next_comm"); f != nil {
		b = p.saveComm(b, r, f, pid)
		b = append(b, ':')
	}
	b = strconv.AppendInt(b, int64(pid), 10)
	if b, v, ok = p.fieldVal(b, r, "next_prio", true); ok {
		b = append(b, " ["...)
		b = strconv.AppendInt(b, int64(int32(v)), 10)
		b = append(b, ']')
	}
	return b, false
}

// appendTaskState writes the plugin's letters for a task state: S D T t Z
// X x W for bits 0 to 7, joined by '|', or R.
func appendTaskState(b []byte, v int32) []byte {
	const states = "SDTtZXxW"
	found := false
	for i := 0; i < len(states); i++ {
		if v&(1<<i) == 0 {
			continue
		}
		if found {
			b = append(b, '|')
		}
		found = true
		b = append(b, states[i])
	}
	if !found {
		b = append(b, 'R')
	}
	return b
}

// schedWakeup: "comm:pid [prio] success=1 CPU:002".
func schedWakeup(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, pid, ok := p.fieldVal(b, r, "pid", true)
	if !ok {
		return append(b, '!'), true
	}
	if f := r.ev.findAnyField("comm"); f != nil {
		b = p.saveComm(b, r, f, pid)
		b = append(b, ':')
	}
	b = strconv.AppendInt(b, int64(pid), 10)
	var v uint64
	if b, v, ok = p.fieldVal(b, r, "prio", true); ok {
		b = append(b, " ["...)
		b = strconv.AppendInt(b, int64(v), 10)
		b = append(b, ']')
	}
	if b, v, ok = p.fieldVal(b, r, "success", false); ok {
		b = append(b, " success="...)
		b = strconv.AppendInt(b, int64(v), 10)
	}
	if b, v, ok = p.fieldVal(b, r, "target_cpu", false); ok {
		b = append(b, " CPU:"...)
		if v < 100 {
			b = append(b, '0')
		}
		if v < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendUint(b, v, 10)
	}
	return b, false
}

// callSite prefixes kmem events with "(func+0xoff) " of their call site.
func callSite(p *printer, b []byte, r *rec) ([]byte, bool) {
	f := r.ev.findField("call_site")
	if f == nil {
		return b, true
	}
	switch f.size {
	case 1, 2, 4, 8:
	default:
		return b, true
	}
	v := p.readNum(r.data, f.offset, f.size)
	e, ok := p.syms().find(v)
	if !ok {
		return b, true
	}
	b = append(b, '(')
	b = append(b, e.name...)
	b = append(b, "+0x"...)
	b = appendHex(b, uint64(uint32(v-e.addr)))
	return append(b, ") "...), true
}

// numField is tep_print_num_field with a 0x%llx, %llu or %ld format;
// false when the field is missing (printing `CAN'T FIND FIELD "name"` if
// asked to).
func (p *printer) numField(b []byte, r *rec, verb byte, name string, complain bool) ([]byte, bool) {
	_, v, ok := p.fieldVal(nil, r, name, false)
	if !ok {
		if complain {
			b = append(b, `CAN'T FIND FIELD "`...)
			b = append(b, name...)
			b = append(b, '"')
		}
		return b, false
	}
	switch verb {
	case 'x':
		return append0x(b, v), true
	case 'd':
		return strconv.AppendInt(b, int64(v), 10), true
	}
	return strconv.AppendUint(b, v, 10), true
}

// funcField is tep_print_func_field(" function=%s"): the symbol and
// "/0x" its address minus the value, or 0x%08llx.
func (p *printer) funcField(b []byte, r *rec, name string) []byte {
	_, v, ok := p.fieldVal(nil, r, name, false)
	if !ok {
		return b
	}
	var tmp []byte
	if e, ok := p.syms().find(v); ok {
		tmp = append(tmp, e.name...)
		tmp = append(tmp, "/0x"...)
		tmp = appendHex(tmp, e.addr-v)
	} else {
		tmp = append(tmp, "0x"...)
		h := strconv.FormatUint(v, 16)
		for i := len(h); i < 8; i++ {
			tmp = append(tmp, '0')
		}
		tmp = append(tmp, h...)
	}
	if len(tmp) > 127 { // the plugin's buffer
		tmp = tmp[:127]
	}
	b = append(b, " function="...)
	return append(b, tmp...)
}

// hrtimer prints "hrtimer=0x..." from the timer or hrtimer field.
func (p *printer) hrtimer(b []byte, r *rec) []byte {
	b = append(b, "hrtimer="...)
	if b2, ok := p.numField(b, r, 'x', "timer", false); ok {
		return b2
	}
	b, _ = p.numField(b, r, 'x', "hrtimer", true)
	return b
}

func hrtimerExpire(p *printer, b []byte, r *rec) ([]byte, bool) {
	b = p.hrtimer(b, r)
	b = append(b, " now="...)
	b, _ = p.numField(b, r, 'u', "now", true)
	return p.funcField(b, r, "function"), false
}

func hrtimerStart(p *printer, b []byte, r *rec) ([]byte, bool) {
	b = p.hrtimer(b, r)
	b = p.funcField(b, r, "function")
	b = append(b, " expires="...)
	b, _ = p.numField(b, r, 'u', "expires", true)
	b = append(b, " softexpires="...)
	b, _ = p.numField(b, r, 'u', "softexpires", true)
	return b, false
}

// futexArg says how the futex plugin prints one argument: its label and
// 'x' (0x%08llx) or 'u' (%llu); an empty label is not printed.
type futexArg struct {
	label string
	how   byte
}

// futexOps are the futex commands the plugin names, with how it prints
// val, utime (or val2), uaddr2 and val3.
var futexOps = [...]struct {
	name string
	args [4]futexArg
}{
	{"FUTEX_WAIT", [4]futexArg{{" val=", 'x'}, {" utime=", 'x'}}},
	{"FUTEX_WAKE", [4]futexArg{{" val=", 'u'}}},
	{"FUTEX_FD", [4]futexArg{{" val=", 'u'}}},
	{"FUTEX_REQUEUE", [4]futexArg{{" val=", 'u'}, {" val2=", 'u'}, {" uaddr2=", 'x'}}},
	{"FUTEX_CMP_REQUEUE", [4]futexArg{{" val=", 'u'}, {" val2=", 'u'}, {" uaddr2=", 'x'}, {" val3=", 'x'}}},
	{"FUTEX_WAKE_OP", [4]futexArg{{" val=", 'u'}, {" val2=", 'u'}, {" uaddr2=", 'x'}, {" val3=", 'x'}}},
	{"FUTEX_LOCK_PI", [4]futexArg{{}, {" utime=", 'x'}}},
	{"FUTEX_UNLOCK_PI", [4]futexArg{}},
	{"FUTEX_TRYLOCK_PI", [4]futexArg{}},
	{"FUTEX_WAIT_BITSET", [4]futexArg{{" val=", 'x'}, {" utime=", 'x'}, {}, {" val3=", 'x'}}},
	{"FUTEX_WAKE_BITSET", [4]futexArg{{" val=", 'u'}, {}, {}, {" val3=", 'x'}}},
	{"FUTEX_WAIT_REQUEUE_PI", [4]futexArg{{" val=", 'x'}, {" utime=", 'x'}, {" uaddr2=", 'x'}, {" val3=", 'x'}}},
	{"FUTEX_CMP_REQUEUE_PI", [4]futexArg{{" val=", 'u'}, {" val2=", 'u'}, {" uaddr2=", 'x'}, {" val3=", 'x'}}},
}

// futex prints a futex syscall as "op=FUTEX_WAIT|FUTEX_PRIVATE_FLAG
// uaddr=0x... val=0x...".
func futex(p *printer, b []byte, r *rec) ([]byte, bool) {
	var v [6]uint64
	for i, name := range []string{"uaddr", "op", "val", "utime", "uaddr2", "val3"} {
		var ok bool
		if b, v[i], ok = p.fieldVal(b, r, name, true); !ok {
			return b, true
		}
	}
	const private, realtime = 128, 256
	op := v[1]
	cmd := op &^ (private | realtime)
	if cmd >= uint64(len(futexOps)) {
		return b, true
	}
	fop := &futexOps[cmd]
	b = append(b, "op="...)
	b = append(b, fop.name...)
	if op&private != 0 {
		b = append(b, "|FUTEX_PRIVATE_FLAG"...)
	}
	if op&realtime != 0 {
		b = append(b, "|FUTEX_CLOCK_REALTIME"...)
	}
	b = append(b, " uaddr="...)
	b = append08x(b, v[0])
	for i, a := range fop.args {
		switch a.how {
		case 'x':
			b = append08x(append(b, a.label...), v[i+2])
		case 'u':
			b = strconv.AppendUint(append(b, a.label...), v[i+2], 10)
		}
	}
	return b, false
}

// append08x appends v as 0x%08llx.
func append08x(b []byte, v uint64) []byte {
	b = append(b, "0x"...)
	h := strconv.FormatUint(v, 16)
	for i := len(h); i < 8; i++ {
		b = append(b, '0')
	}
	return append(b, h...)
}

func tlbFlush(p *printer, b []byte, r *rec) ([]byte, bool) {
	b = append(b, "pages="...)
	b, _ = p.numField(b, r, 'd', "pages", true)
	b, v, ok := p.fieldVal(b, r, "reason", true)
	if !ok {
		return b, true
	}
	b = append(b, " reason="...)
	switch v {
	case 0:
		b = append(b, "flush on task switch"...)
	case 1:
		b = append(b, "remote shootdown"...)
	case 2:
		b = append(b, "local shootdown"...)
	case 3:
		b = append(b, "local mm shootdown"...)
	}
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(v), 10)
	return append(b, ')'), false
}

// function prints a function trace entry: the function, indented by its
// depth as guessed from the parents seen on this CPU.
func function(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, ip, ok := p.fieldVal(b, r, "ip", true)
	if !ok {
		return append(b, '!'), true
	}
	fn, fnOK := p.syms().find(ip)
	b, pip, ok := p.fieldVal(b, r, "parent_ip", true)
	if !ok {
		return append(b, '!'), true
	}
	parent, parentOK := p.syms().find(pip)
	index := 0
	if parentOK {
		child := ""
		if fnOK {
			child = fn.name
		}
		index = p.funcStack(r.cpu).index(parent.name, child, fnOK)
	}
	b = p.pad(b, index*3)
	if fnOK {
		return append(b, fn.name...), false
	}
	return append0x(b, ip), false
}

// funcStack is the function plugin's per-CPU call stack guess.
type funcStack struct {
	stack []string // "" is an empty slot
}

func (p *printer) funcStack(cpu int) *funcStack {
	for len(p.fstacks) <= cpu {
		p.fstacks = append(p.fstacks, &funcStack{})
	}
	return p.fstacks[cpu]
}

// index is add_and_get_index: the depth of parent, which child (when
// known) then follows.
func (s *funcStack) index(parent, child string, known bool) int {
	for i := 0; i < len(s.stack) && s.stack[i] != ""; i++ {
		if s.stack[i] == parent {
			if known {
				s.set(i+1, child)
			}
			return i
		}
	}
	s.set(0, parent)
	if known {
		s.set(1, child)
	}
	return 0
}

func (s *funcStack) set(i int, name string) {
	if i >= len(s.stack) {
		s.stack = append(s.stack, make([]string, 10)...)
	}
	s.stack[i] = name
}

// kernelStack prints "<stack trace >" and one "=> func (addr)" line per
// frame.
func kernelStack(p *printer, b []byte, r *rec) ([]byte, bool) {
	f := r.ev.findAnyField("caller")
	if f == nil {
		return append(b, "<CANT FIND FIELD caller>"...), false
	}
	b = append(b, "<stack trace >\n"...)
	for off := f.offset; off < len(r.data) && !p.full(b); off += p.longSize {
		addr := p.readNum(r.data, off, p.longSize)
		if (p.longSize == 8 && addr == ^uint64(0)) || uint32(addr) == ^uint32(0) {
			break
		}
		if e, ok := p.syms().find(addr); ok {
			b = append(b, "=> "...)
			b = append(b, e.name...)
			b = append(b, " ("...)
			b = appendHex(b, addr)
			b = append(b, ")\n"...)
		} else {
			b = append(b, "=> "...)
			b = appendHex(b, addr)
			b = append(b, '\n')
		}
	}
	return b, false
}

// rawData prints "# id" and the buffer's bytes.
func rawData(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, id, ok := p.fieldVal(b, r, "id", true)
	if !ok {
		return append(b, '!'), true
	}
	b = append(b, "# "...)
	b = appendHex(b, id)
	f := r.ev.findAnyField("buf")
	if f == nil {
		return append(b, "<CANT FIND FIELD buf>"...), false
	}
	for off := f.offset; off < len(r.data); off++ {
		b = append(b, ' ')
		b = appendHex2(b, r.data[off])
	}
	return b, false
}

// funcRepeats prints a function entry and how often it repeated.
func funcRepeats(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, _ = function(p, b, r)
	var count, top, bottom uint64
	var ok bool
	if b, count, ok = p.fieldVal(b, r, "count", true); !ok {
		return append(b, '!'), true
	}
	if b, top, ok = p.fieldVal(b, r, "top_delta_ts", true); !ok {
		return append(b, '!'), true
	}
	if b, bottom, ok = p.fieldVal(b, r, "bottom_delta_ts", true); !ok {
		return append(b, '!'), true
	}
	b = append(b, " (count: "...)
	b = strconv.AppendInt(b, int64(count), 10)
	b = append(b, "  last_ts: "...)
	b = p.appendTS(b, r.ts-(top<<32|bottom))
	return append(b, ')'), false
}
