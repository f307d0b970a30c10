package ops

import "sync/atomic"

// Jitter holds the seed of the moved Morton boxes (ConvFitSelect.Jitter) of
// the ConvFit and Block ops made with it: each run of such an op reads the
// seed it holds then. Set it between runs of a graph, never while one runs,
// so that a forward run and its gradient see the same seed. A nil *Jitter
// and the seed 0 give the tight box.
type Jitter struct{ seed atomic.Uint64 }

// Set makes seed the seed of the next runs; on a nil j it does nothing.
func (j *Jitter) Set(seed uint64) {
	if j != nil {
		j.seed.Store(seed)
	}
}

// Seed returns the seed the ops run with now: 0 for a nil j.
func (j *Jitter) Seed() uint64 {
	if j == nil {
		return 0
	}
	return j.seed.Load()
}
