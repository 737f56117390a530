package parse

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestSynthGolden parses each testdata/synth/NAME.in, a definition, and
// compares its listing and derived format file with NAME.golden.
func TestSynthGolden(t *testing.T) {
	goldenFiles(t, "synth", func(t *testing.T, input string) (string, string) {
		src := strings.TrimSuffix(input, "\n")
		d, err := ParseSynth("synth", src)
		if err != nil {
			t.Fatalf("ParseSynth(%q) = %+v", src, err)
		}
		return d.String() + "\n" + d.FormatFile(1500), fmt.Sprintf("ParseSynth(%q)", src)
	})
}

// TestSynthFormat checks that the derived format is one the rest of gtrace
// reads like any event's: offsets, sizes, classes.
func TestSynthFormat(t *testing.T) {
	d, err := ParseSynth("synth", "ev u64 lat; pid_t pid; char comm[16]; char path[]; unsigned long[] stack; int prio")
	if err != nil {
		t.Fatal(err)
	}
	f := d.Format(65535)
	if f.System != "synthetic" || f.Name != "ev" || f.ID != 65535 {
		t.Fatalf("Format() = %s (ID %d)", f.FullName(), f.ID)
	}
	checkFields(t, f, []fieldWant{
		{"lat", 8, 8, false, ClassNumeric},
		{"pid", 16, 4, true, ClassNumeric},
		{"comm", 24, 16, true, ClassString},
		{"path", 280, 8, true, ClassDataLoc},
		{"stack", 288, 8, true, ClassDataLoc},
		{"prio", 296, 4, true, ClassNumeric},
	})
}

// synthErrorTests are bad definitions: the kernel's message (or gtrace's
// where the kernel takes it) and the caret's column and width.
var synthErrorTests = []struct {
	src      string
	msg      string
	col, len int
}{
	{"", "Command must be of the form: <name> field[;field] ...", 1, 0},
	{"   ", "Command must be of the form: <name> field[;field] ...", 4, 0},
	{"myevent", "Command must be of the form: <name> field[;field] ...", 1, 7},
	{"myevent u64", "Command must be of the form: <name> field[;field] ...", 1, 11},
	{"myevent u64; lat", "Command must be of the form: <name> field[;field] ...", 1, 11},
	{"mye-vent char str[]", "Illegal name", 1, 8},
	{"1ev u64 a", "Illegal name", 1, 3},
	{"myevent chr arg", "Invalid type", 9, 3},
	{"myevent u64 a; chr arg", "Invalid type", 16, 3},
	{"myevent char str[257]", "Invalid array specification", 17, 5},
	{"myevent char str[1000]", "Invalid array specification", 17, 6},
	{"myevent char str[ab]", "Invalid array specification", 17, 4},
	{"myevent char[16] str[8]", "Invalid array specification", 21, 3},
	{"myevent char str[16]x", "Invalid array specification", 17, 5},
	{"myevent char[257] str", "Invalid type", 9, 9},
	{"myevent u64 arr[4]", "Invalid type", 9, 3},
	{"myevent unsigned foo x", "Invalid type", 18, 3},
	{"myevent u64 a; unsigned", "Incomplete type", 16, 8},
	{"myevent u64 a; unsigned int", "Incomplete type", 16, 8},
	{"myevent u64 a; int", "Invalid field", 16, 3},
	{"myevent u64 a u64", "Invalid field", 15, 3},
	{"myevent u64 a-b", "Illegal name", 13, 3},
	{"myevent u64 9a", "Illegal name", 13, 2},
	{"myevent char [16]", "Illegal name", 14, 4},
	{"myevent u64 a; u64 b; u64 a", "duplicate field name \"a\"", 27, 1},
	{"myevent u64 common_pid", "field name \"common_pid\" is taken by the common fields of every event", 13, 10},
	{"myevent xchar[4] s", "Invalid type", 9, 8},
	{"myevent [char[1] s", "Invalid type", 9, 8},
	{"!myevent", "a removal is not a definition", 1, 8},
	{"-:myevent", "a removal is not a definition", 1, 9},
	{"s:kprobes/ev u64 a", "Command must be of the form: s or -:[synthetic/]<name> field[;field] ...", 3, 7},
	{"s:synthetic/1ev u64 a", "Illegal name", 13, 3},
}

func TestSynthErrors(t *testing.T) {
	many := "many"
	for i := 0; i <= SynthFieldsMax; i++ {
		many += fmt.Sprintf(" u64 f%02d;", i)
	}
	tests := append(synthErrorTests, struct {
		src      string
		msg      string
		col, len int
	}{many, "Too many fields", 5 + 9*SynthFieldsMax + 1, 7})
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			d, err := ParseSynth("--synth", tt.src)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ParseSynth(%q) = %v, %v, want *Error", tt.src, d, err)
			}
			_, col := e.Position()
			if e.Msg != tt.msg || col != tt.col || e.End-e.Off != tt.len {
				t.Errorf("ParseSynth(%q) = %q at column %d width %d, want %q at %d width %d\n%+v",
					tt.src, e.Msg, col, e.End-e.Off, tt.msg, tt.col, tt.len, e)
			}
		})
	}
}
