package eval

import (
	"math/rand/v2"
	"path"
	"strings"
	"testing"

	"github.com/gtrace/gtrace/internal/testutil"
	"github.com/gtrace/gtrace/pkg/parse"
)

func TestShellGlob(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"", "", true},
		{"", "a", false},
		{"a", "a", true},
		{"?", "", false},
		{"?", "a", true},
		{"??", "a", false},
		{"*", "", true},
		{"a*b", "ab", true},
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"a*b*c", "abbbc", true},
		{"*a*a*", "aa", true},
		{"*a*a*", "a", false},
		{"kv*ker", "kv_worker", true},
		{"[abc]x", "bx", true},
		{"[abc]x", "dx", false},
		{"[a-c]x", "bx", true},
		{"[!a-c]x", "bx", false},
		{"[!a-c]x", "dx", true},
		{"[]]", "]", true},
		{"[]a]", "a", true},
		{"[!]]", "]", false},
		{"[a-]", "-", true},
		{"[a-]", "b", false},
		{"[", "[", true},
		{"[a", "[a", true},
		{"[a-", "[a-", true},
		{"[a", "a", false},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{`a\?`, "a?", true},
		{`a\`, `a\`, true},
		{"/*", "/usr/bin", true},
		{"*", ".hidden", true},
		{"a*", "", false},
		{"[a]", "", false},
	}
	for _, tt := range tests {
		if got := shellGlob(tt.pat, tt.s); got != tt.want {
			t.Errorf("shellGlob(%q, %q) = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
		if got := shellGlob(tt.pat, []byte(tt.s)); got != tt.want {
			t.Errorf("shellGlob(%q, []byte(%q)) = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
}

// TestGlobAgainstPathMatch compares shellGlob with path.Match, which
// agrees with it on patterns of letters, '?' and '*' without '/'.
func TestGlobAgainstPathMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string) string {
		b := make([]byte, r.IntN(7))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		pat, s := word("ab?*"), word("ab")
		want, _ := path.Match(pat, s)
		if got := shellGlob(pat, s); got != want {
			t.Fatalf("shellGlob(%q, %q) = %v, path.Match says %v", pat, s, got, want)
		}
	}
}

// TestGlobForms checks that the fast forms the binder picks (exact,
// prefix, suffix, substring) agree with full glob matching.
func TestGlobForms(t *testing.T) {
	f := testutil.Format(t, "syscalls:sys_enter_write")
	r := rand.New(rand.NewPCG(3, 4))
	word := func(alphabet string, n int) string {
		b := make([]byte, r.IntN(n))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 5000 {
		body := word("abc", 4)
		pat := []string{body, body + "*", "*" + body, "*" + body + "*"}[r.IntN(4)]
		bf := bind(t, f, `comm ~ "`+pat+`"`)
		p := bf.Root.(*parse.BoundPred)
		if pat != "" && pat != "*" && pat != "**" && strings.Trim(pat, "*") != "" && p.Glob.Kind == parse.GlobFull {
			t.Fatalf("%q bound as a full glob", pat)
		}
		s := word("abc", 8)
		if got, want := Match(bf, nil, Context{Comm: s}), shellGlob(pat, s); got != want {
			t.Fatalf("comm ~ %q on %q = %v, shellGlob says %v", pat, s, got, want)
		}
	}
}
