package live

import "github.com/gtrace/gtrace/pkg/launch"

// Holding reports whether this process is a copy of gtrace started to
// hold a finished run's kernel objects (see probe's DetachLater): it
// must call HoldUntilParentExits and exit.
func Holding() bool { return launch.Holding() }

// HoldUntilParentExits returns once the gtrace that started this process
// has exited; exiting then closes what this process holds.
func HoldUntilParentExits() error { return launch.HoldUntilParentExits() }
