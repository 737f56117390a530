package hist

import (
	"slices"
	"strconv"
	"strings"
)

// Stack is the value of a stack key (common_stacktrace): the kernel stack
// of the events, innermost frame first, at most bpfgen.StackDepth frames.
// Its frames are symbolized once, on first print, however many entries
// and outputs share it.
type Stack struct {
	PCs  []uint64 // return addresses; the first zero ends the stack
	User bool     // a user stack of process PID (ustacktrace)
	PID  uint32
	syms []string // PCs as %pS, once symbolized
}

// NewStack returns the stack of frames pcs, up to their first zero.
func NewStack(pcs []uint64) *Stack {
	if i := slices.Index(pcs, 0); i >= 0 {
		pcs = pcs[:i]
	}
	return &Stack{PCs: pcs}
}

// frames returns the frames as the kernel's %pS prints them.
func (s *Stack) frames(r Resolver) []string {
	if s == nil {
		return nil
	}
	if s.syms == nil {
		s.syms = make([]string, len(s.PCs))
		for i, pc := range s.PCs {
			switch {
			case !s.User:
				s.syms[i] = r.sym(pc, true)
			case r.User != nil:
				s.syms[i] = r.User(s.PID, pc)
			default:
				s.syms[i] = "0x" + strconv.FormatUint(pc, 16)
			}
		}
	}
	return s.syms
}

// appendStackText appends a stack key after its name as the kernel's
// hist_trigger_print_key does: a colon and newline, then one frame per
// line indented by nine spaces. The next key's ", " or the closing "}"
// follows on the line after the last frame.
func appendStackText(b []byte, s *Stack, r Resolver) []byte {
	b = append(b, ":\n"...)
	for _, f := range s.frames(r) {
		b = append(b, "         "...)
		b = append(b, f...)
		b = append(b, '\n')
	}
	return b
}

// joined is the stack as one cell of CSV and the table: the frames,
// innermost first, joined by "; ".
func (s *Stack) joined(r Resolver) string {
	return strings.Join(s.frames(r), "; ")
}

// jsonFrame is a frame of a stack key in JSON.
type jsonFrame struct {
	Addr uint64 `json:"addr"`
	Sym  string `json:"sym"`
}

// jsonFrames is the stack as JSON gives it: the list of its frames.
func (s *Stack) jsonFrames(r Resolver) []jsonFrame {
	syms := s.frames(r)
	out := make([]jsonFrame, len(syms))
	for i, sym := range syms {
		out[i] = jsonFrame{Addr: s.PCs[i], Sym: sym}
	}
	return out
}

// compare orders stacks by their frames' addresses, innermost first, as
// the kernel compares the keys' bytes.
func (s *Stack) compare(t *Stack) int {
	var x, y []uint64
	if s != nil {
		x = s.PCs
	}
	if t != nil {
		y = t.PCs
	}
	return slices.Compare(x, y)
}
