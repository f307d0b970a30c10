// Package parallel spreads independent work items over the available cores.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls f(i) for every i in [0, n), spreading the calls over
// GOMAXPROCS goroutines. Items are handed out one at a time, so uneven work
// per item (mixtures of different cost) balances itself.
func For(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// ForWorker is For with the worker index w ∈ [0, Workers(n))
// passed along, so callers can give each worker its own scratch space.
func ForWorker(n int, f func(w, i int)) {
	workers := Workers(n)
	if workers <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(w, i)
			}
		})
	}
	wg.Wait()
}

// Workers returns how many goroutines ForWorker uses for n items.
func Workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }
