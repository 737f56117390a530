package hist

import (
	"fmt"

	"github.com/gtrace/gtrace/pkg/bpfgen"
	"github.com/gtrace/gtrace/pkg/parse"
	"github.com/gtrace/gtrace/pkg/tracefs"
)

// SessionRecording is the recording an inter-event session of hist
// triggers runs in (record -R 'hist:...' with --synth): the synthetic
// events it records are written, by the session's programs where they
// are emitted, into the recording's batches, and the session stops at
// the recording's switch.
type SessionRecording struct {
	// Program is the recording's collection (bpfgen.Record): its switch
	// map's spec, which the session's programs share.
	Program *bpfgen.Program
	// Spec is the recording's spec: the batches and rings the records
	// go through (bpfgen.NewRecordAction).
	Spec *bpfgen.RecordSpec
	// Record names the synthetic events recorded (-e synthetic:NAME),
	// each with its -f (nil: every one).
	Record map[string]*parse.BoundFilter
	// Snapshots marks each firing of a snapshot() action in the
	// recording's batches, as a snapshot trigger's, so that the
	// recording's flight recorder writes FILE.snapshot-N.dat; without
	// it, a snapshot() only remembers its triggering value and key.
	Snapshots bool
}

// HasSnapshot reports whether some hist of hists has a snapshot()
// action (onmax($v).snapshot(), onchange($v).snapshot()).
func HasSnapshot(hists []EventHist) bool {
	for _, h := range hists {
		for _, a := range h.Spec.Actions {
			if a.Kind == parse.ActSnapshot {
				return true
			}
		}
	}
	return false
}

// NewRecordingSession binds the hist triggers of a recording, cfg.Hists
// with the synthetic events cfg.Synths, as an inter-event session (one
// collection, as gtrace hist runs it live) that records the synthetic
// events of rec.Record. LiveJob.AttachTo loads it with the maps of the
// loaded recording; Stop prints its hists to cfg.Out.
func NewRecordingSession(fs *tracefs.FS, cfg LiveConfig, rec *SessionRecording) (*LiveJob, error) {
	if rec == nil || rec.Program == nil || rec.Spec == nil || rec.Program.Collection.Maps[bpfgen.SwitchMapName] == nil {
		return nil, fmt.Errorf("a recording's inter-event session: no recording to share")
	}
	return newLiveSession(fs, cfg, rec)
}
