package hist

import (
	"errors"
	"testing"

	"github.com/gtrace/gtrace/pkg/parse"
)

// shareFormat is a format of an event sys:name with the fields given, each
// a line of a format file's field list.
func shareFormat(t *testing.T, name, fields string) *parse.Format {
	t.Helper()
	src := "name: " + name + "\nID: 1\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n" +
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n" +
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n" + fields + "\nprint fmt: \"\"\n"
	f, err := parse.ParseFormat(name, src)
	if err != nil {
		t.Fatal(err)
	}
	f.System = "sys"
	return f
}

func TestShare(t *testing.T) {
	a := shareFormat(t, "a", "\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n")
	b := shareFormat(t, "b", "\tfield:long id;\toffset:16;\tsize:8;\tsigned:1;\n")
	c := shareFormat(t, "c", "\tfield:unsigned int id;\toffset:8;\tsize:4;\tsigned:0;\n")
	type hist struct {
		f    *parse.Format
		spec string
	}
	tests := []struct {
		name  string
		hists []hist
		owner []int
		err   string // the message, at the offsets off:end of the last spec
		off   int
		end   int
	}{
		{"two on one event", []hist{{a, "hist:keys=id"}, {a, "hist:keys=common_pid"}}, []int{0, 1}, "", 0, 0},
		{"the same filter twice", []hist{{a, "hist:keys=id if id == 1"}, {a, "hist:keys=id:size=256 if id == 1"}}, nil, "hist trigger already exists", 10, 12},
		{"another filter", []hist{{a, "hist:keys=id if id == 1"}, {a, "hist:keys=id if id == 2"}}, []int{0, 1}, "", 0, 0},
		{"another sort", []hist{{a, "hist:keys=id"}, {a, "hist:keys=id:sort=id"}}, []int{0, 1}, "", 0, 0},
		{"named and not", []hist{{a, "hist:keys=id"}, {a, "hist:name=x:keys=id"}}, []int{0, 1}, "", 0, 0},
		{"named twice on one event", []hist{{a, "hist:name=x:keys=id"}, {a, "hist:name=x:keys=id"}}, nil, "hist trigger already exists", 17, 19},
		{"named on two events", []hist{{a, "hist:name=x:keys=id"}, {b, "hist:name=x:keys=id if id > 3"}, {a, "hist:keys=id"}}, []int{0, 0, 2}, "", 0, 0},
		{"named, another key", []hist{{a, "hist:name=x:keys=id"}, {b, "hist:name=x:keys=common_pid"}}, nil, "named hist trigger doesn't match existing named trigger", 10, 11},
		{"named, another type", []hist{{a, "hist:name=x:keys=id"}, {c, "hist:keys=id:name=x"}}, nil, "named hist trigger doesn't match existing named trigger", 18, 19},
		{"named, another modifier", []hist{{a, "hist:name=x:keys=id"}, {b, "hist:name=x:keys=id.hex"}}, nil, "named hist trigger doesn't match existing named trigger", 10, 11},
	}
	for _, tt := range tests {
		var plans []*Plan
		for _, h := range tt.hists {
			spec, err := parse.ParseHist("hist", h.spec)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(spec, h.f)
			if err != nil {
				t.Fatal(err)
			}
			plans = append(plans, p)
		}
		owner, err := share(plans)
		if tt.err == "" {
			if err != nil || len(owner) != len(tt.owner) {
				t.Errorf("%s: share = %v, %v, want %v", tt.name, owner, err, tt.owner)
				continue
			}
			for i := range owner {
				if owner[i] != tt.owner[i] {
					t.Errorf("%s: share = %v, want %v", tt.name, owner, tt.owner)
				}
			}
			continue
		}
		var e *parse.Error
		if !errors.As(err, &e) || e.Msg != tt.err || e.Off != tt.off || e.End != tt.end || e.Src != tt.hists[len(tt.hists)-1].spec {
			t.Errorf("%s: share = %v, want %q at %d:%d of the last", tt.name, err, tt.err, tt.off, tt.end)
		}
	}
}

func TestSharedInfo(t *testing.T) {
	owner, _ := parse.ParseHist("hist", "hist:name=gt:keys=common_pid:size=256 if common_pid == 1")
	own, _ := parse.ParseHist("hist", "hist:name=gt:keys=common_pid if common_pid == 2")
	want := "hist:name=gt:keys=common_pid:vals=hitcount:sort=hitcount:size=256 if common_pid == 2 [active]"
	if got := sharedInfo(owner, own); got != want {
		t.Errorf("sharedInfo = %q, want %q", got, want)
	}
}
