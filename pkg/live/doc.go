// Package live runs gtrace's live commands (hist, record, and the coming
// filter and trigger) the one way they all run: the command to trace
// started held until the programs are attached, then released; the run
// ending on Ctrl-C or SIGTERM, after --duration, or when the command
// exits; periodic work every --interval; the traced command's exit status
// passed on. NotifyContext turns SIGINT and SIGTERM into the end of a
// run, of any command, the signal being the context's cause (exit status
// 128+N). It also holds a finished run's kernel objects after gtrace
// has exited, so that their teardown does not keep the user waiting.
package live
