// Command gtrace speaks the kernel's ftrace event language (formats,
// filters, hist triggers, ...) and runs it on eBPF.
package main

import (
	"context"
	"os"

	"github.com/gtrace/gtrace/cmd"
)

func main() {
	ctx, stop := cmd.NotifyContext(context.Background())
	code := cmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
