// Package status draws gtrace's status lines: one line on stderr,
// redrawn in place while long work goes on and cleared when it ends,
// shown only when stderr is a terminal (Terminal decides), so that a
// pipe or a file never gets the carriage returns.
package status
