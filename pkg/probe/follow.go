package probe

import (
	"fmt"

	"github.com/gtrace/gtrace/pkg/attach"
	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// The events whose programs keep the follow map (bpfgen's follow.go).
var (
	followFork = tracefs.Event{System: "sched", Name: "sched_process_fork"}
	followFree = tracefs.Event{System: "sched", Name: "sched_process_free"}
)

// FollowSpec reads the formats of the events that the follow programs run
// on, for --follow.
func FollowSpec(fs *tracefs.FS) (*bpfgen.FollowSpec, error) {
	fork, err := fs.Format(followFork)
	if err != nil {
		return nil, fmt.Errorf("follow processes: %w", err)
	}
	free, err := fs.Format(followFree)
	if err != nil {
		return nil, fmt.Errorf("follow processes: %w", err)
	}
	return &bpfgen.FollowSpec{Fork: fork, Free: free}, nil
}

// Follow puts the processes pids in the follow map of the loaded
// collection (bpfgen's Collection.AddFollow), then attaches the programs
// that keep it: from then on, every process that a followed one forks is
// followed too. Call it before attaching the programs that the map gates,
// so that no child forked meanwhile is missed.
func (o *Objects) Follow(pids []uint32) error {
	m := o.Map(bpfgen.FollowMapName)
	if m == nil {
		return fmt.Errorf("follow processes: no map %s in the collection", bpfgen.FollowMapName)
	}
	for _, pid := range pids {
		if err := m.Put(pid, uint32(1)); err != nil {
			return fmt.Errorf("follow process %d: %w", pid, err)
		}
	}
	if err := o.Attach(bpfgen.FollowForkProgName, attach.TracepointAt(followFork.System, followFork.Name)); err != nil {
		return err
	}
	return o.Attach(bpfgen.FollowFreeProgName, attach.TracepointAt(followFree.System, followFree.Name))
}
