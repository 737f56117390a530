package eval

import "github.com/gtrace/gtrace/pkg/parse"

// text is what strings are matched in: a record's bytes or the task name.
type text interface{ ~string | ~[]byte }

// globMatch matches s against a bound pattern. Suffix patterns compare
// with the end of the actual string, not of the array it is stored in.
func globMatch[T text](g parse.Glob, s T) bool {
	t := g.Text
	switch g.Kind {
	case parse.GlobExact:
		return len(s) == len(t) && equalAt(s, 0, t)
	case parse.GlobPrefix:
		return len(s) >= len(t) && equalAt(s, 0, t)
	case parse.GlobSuffix:
		return len(s) >= len(t) && equalAt(s, len(s)-len(t), t)
	case parse.GlobSubstr:
		for i := 0; i+len(t) <= len(s); i++ {
			if equalAt(s, i, t) {
				return true
			}
		}
		return false
	}
	return shellGlob(t, s)
}

// equalAt reports whether s[off:off+len(t)] equals t; s must be long
// enough.
func equalAt[T text](s T, off int, t string) bool {
	for i := 0; i < len(t); i++ {
		if s[off+i] != t[i] {
			return false
		}
	}
	return true
}

// shellGlob matches the whole of s against a shell pattern as the
// kernel's glob_match does: ? any byte, * any run, [a-z] and [!a-z]
// classes (a malformed class is a literal '['), \x the byte x (a trailing
// backslash is literal). '/' and a leading '.' are not special.
func shellGlob[T text](pat string, s T) bool {
	p, i := 0, 0
	backP, backI := -1, 0
	for {
		ok := false
		switch {
		case p == len(pat):
			if i == len(s) {
				return true
			}
		case pat[p] == '*':
			p++
			if p == len(pat) {
				return true
			}
			backP, backI = p, i
			continue
		case pat[p] == '?':
			if i == len(s) {
				return false
			}
			ok, p = true, p+1
		default:
			if pat[p] == '[' {
				if i == len(s) {
					return false
				}
				if in, next, wellFormed := matchClass(pat, p+1, s[i]); wellFormed {
					ok, p = in, next
					break
				}
			}
			d := pat[p]
			if d == '\\' && p+1 < len(pat) {
				p++
				d = pat[p]
			}
			if i < len(s) && s[i] == d {
				ok, p = true, p+1
			}
		}
		if ok {
			i++
			continue
		}
		// Retry from the last *, one byte further into s.
		if i >= len(s) || backP < 0 {
			return false
		}
		backI++
		p, i = backP, backI
	}
}

// matchClass matches c against the class that starts at pat[j], just
// after the '['. It returns whether c is in the class, where the pattern
// continues, and false for wellFormed when the class is not closed.
func matchClass(pat string, j int, c byte) (in bool, next int, wellFormed bool) {
	inverted := j < len(pat) && pat[j] == '!'
	if inverted {
		j++
	}
	for first := true; ; first = false {
		if j >= len(pat) {
			return false, 0, false
		}
		a := pat[j]
		j++
		if a == ']' && !first {
			return in != inverted, j, true
		}
		b := a
		if j < len(pat) && pat[j] == '-' {
			if j+1 == len(pat) {
				return false, 0, false
			}
			if pat[j+1] != ']' {
				b = pat[j+1]
				j += 2
			}
		}
		if a <= c && c <= b {
			in = true
		}
	}
}
