//go:build !(mpi && cgo)

package dist

import "testing"

// benchAllReduce times all-reduces of n values on a Local group of two
// ranks; the second, in its own goroutine, joins every all-reduce until the
// first aborts the group.
func benchAllReduce(b *testing.B, n int) {
	cs := NewLocal(2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]float64, n)
		for cs[1].AllReduceFloat64(buf) == nil {
		}
	}()
	buf := make([]float64, n)
	for b.Loop() {
		if err := cs[0].AllReduceFloat64(buf); err != nil {
			b.Fatal(err)
		}
	}
	cs[0].Abort(0)
	<-done
}
