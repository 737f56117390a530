package vm

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Output is what one side of a case printed.
type Output struct {
	RC     int    // the exit status
	Stdout string // the hist text
	Stderr string
}

// Case is one case's results from the guest.
type Case struct {
	Name    string
	Kind    string // "hist", "multi", "record", "plan", "list", "effect", "synth", "kprobe", "sql", "session" or "live"
	Kernel  Output
	Gtrace  Output
	Report  Output  // record cases: gtrace report of the kernel side's trace.dat
	Plan    Output  // plan and nobtf-* cases: gtrace's --dry-run, without the instructions
	Start   float64 // the guest's uptime in seconds when the case began
	Mid     float64 // ... when the kernel's side ended
	End     float64 // ... when the case ended
	Partial bool    // the log ended inside the case
	Skip    string  // why the guest skipped the case (too old a kernel)
}

// Console is a parsed console log.
type Console struct {
	Release string  // uname -r of the guest
	Boot    float64 // the guest's uptime when /init began
	Cases   []*Case
	Done    bool    // the guest ran every case
	Finish  float64 // the guest's uptime when it had run every case
}

// ParseConsole parses the serial console log of a guest that ran init.sh.
// Lines that are not between markers (the kernel's messages) are ignored.
func ParseConsole(r io.Reader) (*Console, error) {
	con := &Console{}
	var c *Case
	var section *Output
	var stderr bool
	var b64 strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if section != nil {
			if line != "=== ." {
				b64.WriteString(line)
				continue
			}
			data, err := base64.StdEncoding.DecodeString(b64.String())
			if err != nil {
				return nil, fmt.Errorf("case %s: bad base64: %w", c.Name, err)
			}
			if stderr {
				section.Stderr = string(data)
			} else {
				section.Stdout = string(data)
			}
			section = nil
			b64.Reset()
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "===" {
			continue
		}
		kv := func(i int) string {
			if i >= len(f) {
				return ""
			}
			_, v, _ := strings.Cut(f[i], "=")
			return v
		}
		up := func(i int) float64 { v, _ := strconv.ParseFloat(kv(i), 64); return v }
		switch f[1] {
		case "BOOT":
			con.Boot, con.Release = up(2), kv(3)
		case "CASE":
			if len(f) < 3 {
				return nil, fmt.Errorf("bad marker %q", line)
			}
			c = &Case{Name: f[2], Start: up(3), Kind: kv(4), Partial: true}
			con.Cases = append(con.Cases, c)
		case "KERNEL-TIME", "KERNEL", "KERNEL-STDERR", "GTRACE-TIME", "GTRACE", "GTRACE-STDERR",
			"REPORT", "REPORT-STDERR", "PLAN", "PLAN-STDERR", "END":
			if c == nil {
				return nil, fmt.Errorf("marker %q outside a case", line)
			}
			switch f[1] {
			case "KERNEL-TIME":
				c.Mid = up(2)
			case "END":
				c.End, c.Partial = up(3), false
			case "GTRACE-TIME":
			default:
				section = &c.Kernel
				switch {
				case strings.HasPrefix(f[1], "GTRACE"):
					section = &c.Gtrace
				case strings.HasPrefix(f[1], "REPORT"):
					section = &c.Report
				case strings.HasPrefix(f[1], "PLAN"):
					section = &c.Plan
				}
				stderr = strings.HasSuffix(f[1], "-STDERR")
				if !stderr {
					section.RC, _ = strconv.Atoi(kv(2))
				}
			}
		case "SKIP":
			if len(f) < 3 {
				return nil, fmt.Errorf("bad marker %q", line)
			}
			con.Cases = append(con.Cases, &Case{Name: f[2], Skip: strings.Join(f[3:], " ")})
			c = nil
		case "DONE":
			con.Done, con.Finish = true, up(2)
		}
	}
	return con, sc.Err()
}
