// Command gtrace speaks the kernel's ftrace event language (formats,
// filters, hist triggers, ...) and runs it on eBPF.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gtrace/gtrace/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
