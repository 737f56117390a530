package hist

import (
	"math"
	"strconv"

	"github.com/gtrace/gtrace/pkg/parse"
)

// The csv, json and table formats give each key as values, not as the
// kernel's padded text: a key is one or more columns, each a number or a
// string, named after the field:
//
//	key                columns
//	string, comm       NAME (the text)
//	common_stacktrace  NAME (the frames, innermost first, joined by "; ")
//	number, .usecs     NAME (signed for signed fields)
//	.hex               NAME (the number), NAME.hex (its hex digits)
//	.sym, .sym-offset  NAME (the address), NAME.sym or NAME.sym-offset (the symbol)
//	.execname          NAME (the pid), NAME.execname (the task's name)
//	.syscall           NAME (the number), NAME.syscall (the name, sys_read)
//	.log2              NAME.log2 (the exponent), NAME.min, NAME.max
//	.buckets=N         NAME.min, NAME.max
//
// NAME.min and NAME.max are the bounds, inclusive, of the values a
// bucket holds: 2^(k-1)+1 to 2^k for .log2 bucket k (0 and 1 for k 0),
// the bucket's start to start+N-1 for .buckets=N.

// keyColumns names the columns of key k.
func keyColumns(k *Key) []string {
	name := k.Spec.Name
	if k.Kind == KeyString {
		return []string{name}
	}
	switch k.Spec.Mod {
	case parse.ModHex, parse.ModSym, parse.ModSymOffset, parse.ModExecname, parse.ModSyscall:
		return []string{name, fieldLabel(k.Spec)}
	case parse.ModLog2:
		return []string{fieldLabel(k.Spec), name + ".min", name + ".max"}
	case parse.ModBuckets:
		return []string{name + ".min", name + ".max"}
	}
	return []string{name}
}

// keyCells appends the values of key k's columns for value v of an entry
// whose saved task name is comm: uint64, int64 or string.
func keyCells(cells []any, k *Key, v *KeyValue, comm string, r Resolver) []any {
	switch k.Kind {
	case KeyString:
		return append(cells, untilNUL(v.Str))
	case KeyStack:
		return append(cells, v.Stack.joined(r))
	}
	raw := keyRaw(k, v)
	switch k.Spec.Mod {
	case parse.ModHex:
		return append(cells, raw, strconv.FormatUint(v.Num, 16))
	case parse.ModSym, parse.ModSymOffset:
		return append(cells, raw, r.sym(v.Num, k.Spec.Mod == parse.ModSymOffset))
	case parse.ModExecname:
		return append(cells, raw, untilNUL(comm))
	case parse.ModSyscall:
		return append(cells, raw, r.syscall(v.Num))
	case parse.ModLog2:
		lo, hi := log2Bounds(v.Num)
		return append(cells, v.Num, lo, hi)
	case parse.ModBuckets:
		return append(cells, v.Num, v.Num+k.Spec.Buckets-1)
	}
	return append(cells, raw)
}

// log2Bounds are the smallest and largest values of .log2 bucket k,
// which holds ilog2(roundup_pow_of_two(v)) == k: (2^(k-1), 2^k], and 0
// and 1 for bucket 0.
func log2Bounds(k uint64) (lo, hi uint64) {
	switch {
	case k == 0:
		return 0, 1
	case k >= 64:
		return 1<<63 + 1, math.MaxUint64
	}
	return 1<<(k-1) + 1, 1 << k
}

// cellText is a cell as CSV and the table print it.
func cellText(c any) string {
	switch n := c.(type) {
	case uint64:
		return strconv.FormatUint(n, 10)
	case int64:
		return strconv.FormatInt(n, 10)
	}
	return c.(string)
}

// textColumn reports whether column i of key k holds names, which the
// table aligns left, rather than numbers.
func textColumn(k *Key, i int) bool {
	if k.Kind != KeyNumber {
		return true
	}
	switch k.Spec.Mod {
	case parse.ModSym, parse.ModSymOffset, parse.ModExecname, parse.ModSyscall:
		return i == 1
	}
	return false
}
