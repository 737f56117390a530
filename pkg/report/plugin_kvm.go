package report

import "strconv"

// This file holds libtraceevent's kvm plugin (built without a
// disassembler, as Debian builds it).

// exitReason names a VMX (isa 1) or SVM (isa 2) exit reason.
type exitReason struct {
	val  int32
	name string
}

var vmxExitReasons = []exitReason{
	{0, "EXCEPTION_NMI"}, {1, "EXTERNAL_INTERRUPT"}, {2, "TRIPLE_FAULT"}, {7, "PENDING_INTERRUPT"},
	{8, "NMI_WINDOW"}, {9, "TASK_SWITCH"}, {10, "CPUID"}, {12, "HLT"}, {13, "INVD"}, {14, "INVLPG"},
	{15, "RDPMC"}, {16, "RDTSC"}, {18, "VMCALL"}, {19, "VMCLEAR"}, {20, "VMLAUNCH"}, {21, "VMPTRLD"},
	{22, "VMPTRST"}, {23, "VMREAD"}, {24, "VMRESUME"}, {25, "VMWRITE"}, {26, "VMOFF"}, {27, "VMON"},
	{28, "CR_ACCESS"}, {29, "DR_ACCESS"}, {30, "IO_INSTRUCTION"}, {31, "MSR_READ"}, {32, "MSR_WRITE"},
	{36, "MWAIT_INSTRUCTION"}, {39, "MONITOR_INSTRUCTION"}, {40, "PAUSE_INSTRUCTION"},
	{41, "MCE_DURING_VMENTRY"}, {43, "TPR_BELOW_THRESHOLD"}, {44, "APIC_ACCESS"}, {45, "EOI_INDUCED"},
	{48, "EPT_VIOLATION"}, {49, "EPT_MISCONFIG"}, {50, "INVEPT"}, {52, "PREEMPTION_TIMER"},
	{54, "WBINVD"}, {55, "XSETBV"}, {56, "APIC_WRITE"}, {58, "INVPCID"}, {62, "PML_FULL"},
	{63, "XSAVES"}, {64, "XRSTORS"},
}

var svmExitReasons = []exitReason{
	{0x000, "EXIT_READ_CR0"}, {0x003, "EXIT_READ_CR3"}, {0x004, "EXIT_READ_CR4"}, {0x008, "EXIT_READ_CR8"},
	{0x010, "EXIT_WRITE_CR0"}, {0x013, "EXIT_WRITE_CR3"}, {0x014, "EXIT_WRITE_CR4"}, {0x018, "EXIT_WRITE_CR8"},
	{0x020, "EXIT_READ_DR0"}, {0x021, "EXIT_READ_DR1"}, {0x022, "EXIT_READ_DR2"}, {0x023, "EXIT_READ_DR3"},
	{0x024, "EXIT_READ_DR4"}, {0x025, "EXIT_READ_DR5"}, {0x026, "EXIT_READ_DR6"}, {0x027, "EXIT_READ_DR7"},
	{0x030, "EXIT_WRITE_DR0"}, {0x031, "EXIT_WRITE_DR1"}, {0x032, "EXIT_WRITE_DR2"}, {0x033, "EXIT_WRITE_DR3"},
	{0x034, "EXIT_WRITE_DR4"}, {0x035, "EXIT_WRITE_DR5"}, {0x036, "EXIT_WRITE_DR6"}, {0x037, "EXIT_WRITE_DR7"},
	{0x040, "EXIT_EXCP_DE"}, {0x041, "EXIT_EXCP_DB"}, {0x043, "EXIT_EXCP_BP"}, {0x044, "EXIT_EXCP_OF"},
	{0x045, "EXIT_EXCP_BR"}, {0x046, "EXIT_EXCP_UD"}, {0x047, "EXIT_EXCP_NM"}, {0x048, "EXIT_EXCP_DF"},
	{0x04a, "EXIT_EXCP_TS"}, {0x04b, "EXIT_EXCP_NP"}, {0x04c, "EXIT_EXCP_SS"}, {0x04d, "EXIT_EXCP_GP"},
	{0x04e, "EXIT_EXCP_PF"}, {0x050, "EXIT_EXCP_MF"}, {0x051, "EXIT_EXCP_AC"}, {0x052, "EXIT_EXCP_MC"},
	{0x053, "EXIT_EXCP_XF"}, {0x060, "EXIT_INTR"}, {0x061, "EXIT_NMI"}, {0x062, "EXIT_SMI"},
	{0x063, "EXIT_INIT"}, {0x064, "EXIT_VINTR"}, {0x065, "EXIT_CR0_SEL_WRITE"}, {0x066, "EXIT_IDTR_READ"},
	{0x067, "EXIT_GDTR_READ"}, {0x068, "EXIT_LDTR_READ"}, {0x069, "EXIT_TR_READ"}, {0x06a, "EXIT_IDTR_WRITE"},
	{0x06b, "EXIT_GDTR_WRITE"}, {0x06c, "EXIT_LDTR_WRITE"}, {0x06d, "EXIT_TR_WRITE"}, {0x06e, "EXIT_RDTSC"},
	{0x06f, "EXIT_RDPMC"}, {0x070, "EXIT_PUSHF"}, {0x071, "EXIT_POPF"}, {0x072, "EXIT_CPUID"},
	{0x073, "EXIT_RSM"}, {0x074, "EXIT_IRET"}, {0x075, "EXIT_SWINT"}, {0x076, "EXIT_INVD"},
	{0x077, "EXIT_PAUSE"}, {0x078, "EXIT_HLT"}, {0x079, "EXIT_INVLPG"}, {0x07a, "EXIT_INVLPGA"},
	{0x07b, "EXIT_IOIO"}, {0x07c, "EXIT_MSR"}, {0x07d, "EXIT_TASK_SWITCH"}, {0x07e, "EXIT_FERR_FREEZE"},
	{0x07f, "EXIT_SHUTDOWN"}, {0x080, "EXIT_VMRUN"}, {0x081, "EXIT_VMMCALL"}, {0x082, "EXIT_VMLOAD"},
	{0x083, "EXIT_VMSAVE"}, {0x084, "EXIT_STGI"}, {0x085, "EXIT_CLGI"}, {0x086, "EXIT_SKINIT"},
	{0x087, "EXIT_RDTSCP"}, {0x088, "EXIT_ICEBP"}, {0x089, "EXIT_WBINVD"}, {0x08a, "EXIT_MONITOR"},
	{0x08b, "EXIT_MWAIT"}, {0x08c, "EXIT_MWAIT_COND"}, {0x08d, "EXIT_XSETBV"}, {0x400, "EXIT_NPF"},
	{0x401, "EXIT_AVIC_INCOMPLETE_IPI"}, {0x402, "EXIT_AVIC_UNACCELERATED_ACCESS"}, {-1, "EXIT_ERR"},
}

// exitReasonText prints "reason NAME" for the exit reason in field name.
func (p *printer) exitReasonText(b []byte, r *rec, name string) ([]byte, bool) {
	b, v, ok := p.fieldVal(b, r, name, true)
	if !ok {
		return b, false
	}
	b2, isa, ok := p.fieldVal(b, r, "isa", false)
	b = b2
	if !ok {
		isa = 1
	}
	var table []exitReason
	switch uint32(isa) {
	case 1:
		table = vmxExitReasons
	case 2:
		table = svmExitReasons
	default:
		return append(b, "reason UNKNOWN-ISA"...), true
	}
	for _, e := range table {
		if e.val == int32(v) {
			b = append(b, "reason "...)
			return append(b, e.name...), true
		}
	}
	b = append(b, "reason UNKNOWN ("...)
	b = strconv.AppendUint(b, v, 10)
	return append(b, ')'), true
}

// numFieldf is tep_print_num_field with a format of the form
// pre + one of 0x%llx (verb 'X'), %llx ('x'), %llu ('u'), %u ('U'), %lld
// ('d') + post.
func (p *printer) numFieldf(b []byte, r *rec, pre string, verb byte, post, name string) []byte {
	_, v, ok := p.fieldVal(nil, r, name, false)
	if !ok {
		b = append(b, `CAN'T FIND FIELD "`...)
		b = append(b, name...)
		return append(b, '"')
	}
	b = append(b, pre...)
	switch verb {
	case 'x':
		b = appendHex(b, v)
	case 'u':
		b = strconv.AppendUint(b, v, 10)
	case 'U':
		b = strconv.AppendUint(b, uint64(uint32(v)), 10)
	}
	return append(b, post...)
}

func kvmExit(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, ok := p.exitReasonText(b, r, "exit_reason")
	if !ok {
		return b, true
	}
	b, rip, ok := p.fieldVal(b, r, "guest_rip", true)
	if !ok {
		return b, true
	}
	b = append(b, " rip 0x"...)
	b = appendHex(b, rip)
	_, i1, ok1 := p.fieldVal(nil, r, "info1", false)
	_, i2, ok2 := p.fieldVal(nil, r, "info2", false)
	if ok1 && ok2 {
		b = append(b, " info "...)
		b = appendHex(b, i1)
		b = append(b, ' ')
		b = appendHex(b, i2)
	}
	return b, false
}

func kvmEntry(p *printer, b []byte, r *rec) ([]byte, bool) {
	b = p.numFieldf(b, r, " vcpu ", 'U', "", "vcpu_id")
	b, rip, ok := p.fieldVal(b, r, "rip", true)
	if !ok {
		return b, true
	}
	b = append(b, " rip 0x"...)
	return appendHex(b, rip), false
}

// kvmEmulateInsn prints "csbase:rip: insn bytes [FAIL]". Without a
// disassembler the plugin formats the bytes into a static buffer, which a
// zero length leaves as the previous record had it.
func kvmEmulateInsn(p *printer, b []byte, r *rec) ([]byte, bool) {
	var v [5]uint64
	for i, name := range []string{"rip", "csbase", "len", "flags", "failed"} {
		var ok bool
		if b, v[i], ok = p.fieldVal(b, r, name, true); !ok {
			return b, true
		}
	}
	f := r.ev.findField("insn")
	if f == nil {
		return append(b, "<CANT FIND FIELD insn>"...), true
	}
	if n := int32(v[2]); n > 0 {
		// A crafted format may give len more than 8 bits: past the room
		// left the event is cut anyway.
		n = min(n, int32(min(p.room(b), 1<<30)/3+1))
		insn := overread(r.data, f.offset)
		p.insn = p.insn[:0]
		for i := 0; i < int(n); i++ {
			var c byte
			if i < len(insn) {
				c = insn[i]
			}
			if i > 0 {
				p.insn = append(p.insn, ' ')
			}
			p.insn = appendHex2(p.insn, c)
		}
	}
	b = appendHex(b, v[1])
	b = append(b, ':')
	b = appendHex(b, v[0])
	b = append(b, ": "...)
	b = append(b, p.insn...)
	if v[4] != 0 {
		b = append(b, " FAIL"...)
	}
	return b, false
}

func kvmNestedVMExit(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, rip, ok := p.fieldVal(b, r, "rip", true)
	if !ok {
		return b, true
	}
	b = append(b, " rip "...)
	b = appendHex(b, rip)
	return kvmNestedVMExitInject(p, b, r)
}

func kvmNestedVMExitInject(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, ok := p.exitReasonText(b, r, "exit_code")
	if !ok {
		return b, true
	}
	b = p.numFieldf(b, r, " info1 ", 'x', "", "exit_info1")
	b = p.numFieldf(b, r, " info2 ", 'x', "", "exit_info2")
	b = p.numFieldf(b, r, " int_info ", 'x', "", "exit_int_info")
	b = p.numFieldf(b, r, " int_info_err ", 'x', "", "exit_int_info_err")
	return b, false
}

var kvmAccess = [8]string{"---", "--x", "w--", "w-x", "-u-", "-ux", "wu-", "wux"}

// kvmMMURole prints a shadow page's role word. The plugin ends it with a
// NUL, which ends trace-cmd's line.
func kvmMMURole(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, v, ok := p.fieldVal(b, r, "role", true)
	if !ok {
		return b, true
	}
	w := uint32(v)
	bit := func(n uint) bool { return w>>n&1 != 0 }
	b = strconv.AppendUint(b, uint64(w&15), 10)
	b = append(b, " q"...)
	b = strconv.AppendUint(b, uint64(w>>5&3), 10)
	if bit(7) {
		b = append(b, " direct"...)
	}
	b = append(b, ' ')
	b = append(b, kvmAccess[w>>8&7]...)
	if bit(11) {
		b = append(b, " invalid"...)
	}
	not := func(set bool) string {
		if set {
			return ""
		}
		return "!"
	}
	b = append(b, " "+not(bit(4))+"pae "+not(bit(12))+"nxe "+not(bit(13))+"wp"...)
	if bit(14) {
		b = append(b, " smep"...)
	}
	if bit(15) {
		b = append(b, " smap"...)
	}
	if w>>24 != 0 {
		b = append(b, " smm"...)
	}
	b = p.numFieldf(b, r, " root ", 'U', " ", "root_count")
	b, v, ok = p.fieldVal(b, r, "unsync", true)
	if !ok {
		return b, true
	}
	if v != 0 {
		b = append(b, "unsync"...)
	} else {
		b = append(b, "sync"...)
	}
	p.nul = true
	return append(b, 0), false
}

func kvmMMUGetPage(p *printer, b []byte, r *rec) ([]byte, bool) {
	b, v, ok := p.fieldVal(b, r, "created", true)
	if !ok {
		return b, true
	}
	if v != 0 {
		b = append(b, "new "...)
	} else {
		b = append(b, "existing "...)
	}
	if b, v, ok = p.fieldVal(b, r, "gfn", true); !ok {
		return b, true
	}
	b = append(b, "sp gfn "...)
	b = appendHex(b, v)
	b = append(b, ' ')
	return kvmMMURole(p, b, r)
}
