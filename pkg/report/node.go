package report

import (
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
)

// nodeKind is the type of a compiled print fmt argument. The values are
// libtraceevent's print arg types, which some of its messages print.
type nodeKind uint8

const (
	nNull        nodeKind = iota // an empty operand
	nAtom                        // number, name or string
	nField                       // REC->field
	nFlags                       // __print_flags
	nSymbol                      // __print_symbolic
	nHex                         // __print_hex
	nIntArray                    // __print_array
	nType                        // a cast
	nString                      // __get_str
	nBString                     // a string argument of a trace_printk
	nDynArray                    // __get_dynamic_array, __get_sockaddr
	nOp                          // an operator
	nFunc                        // a plugin's helper function
	nBitmask                     // __get_bitmask
	nDynArrayLen                 // __get_dynamic_array_len
	nHexStr                      // __print_hex_str
	nCpumask                     // __get_cpumask
)

// node is a compiled print fmt argument (libtraceevent's tep_print_arg).
type node struct {
	kind  nodeKind
	text  string // atom or string text, operator, cast type
	name  string // field name
	field *field
	left  *node // operator's left operand; a cast's operand
	right *node
	delim string
	syms  []sym
	args  []*node // helper arguments; flags and symbolic: args[0]
	fn    *helperFunc
	num   uint64 // atom: its value, when known
	numOK bool
}

// sym is a __print_flags or __print_symbolic entry.
type sym struct {
	fval int64 // the value as libtraceevent's eval_flag reads it
	str  string
}

// compiler turns a parsed print fmt into nodes of one event.
type compiler struct {
	p      *printer
	ev     *event
	failed bool // libtraceevent would not have parsed it
}

// top compiles a top-level argument (libtraceevent folds its constant
// operations).
func (c *compiler) top(a parse.PrintArg) *node {
	n := c.node(a)
	consolidate(n)
	return n
}

func (c *compiler) node(a parse.PrintArg) *node {
	switch a := a.(type) {
	case nil:
		return &node{kind: nNull}
	case *parse.PrintAtom:
		return &node{kind: nAtom, text: a.Text}
	case *parse.PrintField:
		return &node{kind: nField, name: a.Name, field: c.ev.findAnyField(a.Name)}
	case *parse.PrintOp:
		n := &node{kind: nOp, text: a.Op, left: c.node(a.L), right: c.node(a.R)}
		if a.Op == "[" && n.left.kind == nDynArray {
			// libtraceevent cannot index __get_dynamic_array().
			c.failed = true
		}
		return n
	case *parse.PrintCast:
		return &node{kind: nType, text: a.Type, left: c.node(a.X)}
	case *parse.PrintFlags:
		return &node{kind: nFlags, args: []*node{c.node(a.X)}, delim: a.Delim, syms: syms(a.Syms)}
	case *parse.PrintSymbolic:
		return &node{kind: nSymbol, args: []*node{c.node(a.X)}, syms: syms(a.Syms)}
	case *parse.PrintSizeof:
		return c.sizeof(a)
	case *parse.PrintDyn:
		return c.dyn(a)
	case *parse.PrintFunc:
		return c.function(a)
	}
	c.failed = true
	return &node{kind: nNull}
}

func syms(ps []parse.PrintSym) []sym {
	out := make([]sym, len(ps))
	for i, s := range ps {
		out[i] = sym{fval: evalFlag(s.Value), str: s.Str}
	}
	return out
}

// flagNames are the names libtraceevent knows when a flag's value is not
// a number.
var flagNames = map[string]int64{
	"HI_SOFTIRQ": 0, "TIMER_SOFTIRQ": 1, "NET_TX_SOFTIRQ": 2, "NET_RX_SOFTIRQ": 3,
	"BLOCK_SOFTIRQ": 4, "IRQ_POLL_SOFTIRQ": 5, "TASKLET_SOFTIRQ": 6, "SCHED_SOFTIRQ": 7,
	"HRTIMER_SOFTIRQ": 8, "RCU_SOFTIRQ": 9, "HRTIMER_NORESTART": 0, "HRTIMER_RESTART": 1,
}

// evalFlag is libtraceevent's eval_flag: a number, a known name, or -1.
func evalFlag(s string) int64 {
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		return int64(parse.CStrtoull(s))
	}
	if v, ok := flagNames[s]; ok {
		return v
	}
	return -1
}

func (c *compiler) sizeof(a *parse.PrintSizeof) *node {
	size := 0
	switch {
	case a.Field != "":
		f := c.ev.findAnyField(a.Field)
		if f == nil || f.flags&fArray != 0 {
			c.failed = true
		} else {
			size = f.size
		}
	case a.Type == "long":
		size = c.p.longSize
	case a.Type == "long long":
		size = 8
	default:
		size = 4
	}
	return &node{kind: nAtom, text: strconv.Itoa(size)}
}

func (c *compiler) dyn(a *parse.PrintDyn) *node {
	switch a.Func {
	case "__get_str", "__get_rel_str":
		return &node{kind: nString, name: a.Field, field: c.ev.findAnyField(a.Field)}
	case "__get_bitmask", "__get_rel_bitmask":
		return &node{kind: nBitmask, name: a.Field, field: c.ev.findAnyField(a.Field)}
	case "__get_cpumask", "__get_rel_cpumask":
		return &node{kind: nCpumask, name: a.Field, field: c.ev.findAnyField(a.Field)}
	}
	f := c.ev.findField(a.Field)
	if f == nil {
		c.failed = true
	}
	kind := nDynArray
	if a.Func == "__get_dynamic_array_len" || a.Func == "__get_rel_dynamic_array_len" {
		kind = nDynArrayLen
	}
	return &node{kind: kind, name: a.Field, field: f}
}

func (c *compiler) function(a *parse.PrintFunc) *node {
	switch a.Name {
	case "__print_hex", "__print_hex_str", "__print_array":
		n := &node{kind: nHex}
		switch a.Name {
		case "__print_hex_str":
			n.kind = nHexStr
		case "__print_array":
			n.kind = nIntArray
		}
		for _, x := range a.Args {
			n.args = append(n.args, c.top(x))
		}
		return n
	}
	fn, ok := helperFuncs[a.Name]
	if !ok || len(fn.params) != len(a.Args) {
		c.failed = true
		return &node{kind: nNull}
	}
	n := &node{kind: nFunc, text: a.Name, fn: fn}
	for _, x := range a.Args {
		n.args = append(n.args, c.node(x))
	}
	return n
}

// consolidate folds an operation on two atoms into an atom, as
// libtraceevent does when it parses top-level and helper arguments.
func consolidate(n *node) {
	if n.kind != nOp {
		return
	}
	consolidate(n.left)
	consolidate(n.right)
	if n.left.kind != nAtom || n.right.kind != nAtom {
		return
	}
	l, r := parse.CStrtoull(n.left.text), parse.CStrtoull(n.right.text)
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	var v uint64
	switch n.text {
	case ">>":
		v = l >> (r & 63)
	case ">=":
		v = b(l >= r)
	case ">":
		v = b(l > r)
	case "<<":
		v = l << (r & 63)
	case "<=":
		v = b(l <= r)
	case "<":
		v = b(l < r)
	case "&&":
		v = b(l != 0 && r != 0)
	case "&":
		v = l & r
	case "||":
		v = b(l != 0 || r != 0)
	case "|":
		v = l | r
	case "-":
		v = l - r
	case "+":
		v = l + r
	case "*":
		v = l * r
	case "^":
		v = l ^ r
	case "/", "%":
		if r == 0 {
			return // libtraceevent would divide by zero
		}
		if n.text == "/" {
			v = l / r
		} else {
			v = l % r
		}
	case "==":
		v = b(l == r)
	case "!=":
		v = b(l != r)
	default:
		return
	}
	*n = node{kind: nAtom, text: strconv.FormatInt(int64(v), 10)}
}
