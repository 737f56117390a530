package probe

import (
	"errors"
	"sync"
)

// Detach closes every link of the collection at once, leaving the
// programs and maps loaded. Closing the last BPF link of a tracepoint
// waits for an RCU grace period; closed together, the links share grace
// periods, so that a recording of hundreds of events stops in about the
// time of one. Close still does the rest.
func (o *Objects) Detach() error {
	errs := make([]error, len(o.links))
	var wg sync.WaitGroup
	for i, l := range o.links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.Close()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
