package cpu

import (
	"math/rand/v2"
	"testing"
)

// TestSplitHeap checks that splitHeap pops what a first-wins scan over the
// slots in order finds (the largest mass, the lowest slot on ties), with
// pushes and pops interleaved as in a greedy selection and masses drawn
// from a few values so that ties are common.
func TestSplitHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var h splitHeap
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		h.reset(n)
		live := map[int32]float64{} // the scan's view: slot → mass
		next := int32(0)
		for step := 0; step < 3*n; step++ {
			if next < int32(n) && (len(live) == 0 || rng.IntN(3) > 0) {
				m := float64(rng.IntN(5))
				h.push(next, m)
				live[next] = m
				next++
				continue
			}
			if len(live) == 0 {
				break
			}
			want, wantMass := int32(-1), -1.0
			for s := range next {
				if m, ok := live[s]; ok && m > wantMass {
					want, wantMass = s, m
				}
			}
			if got := h.pop(); got != want {
				t.Fatalf("trial %d step %d: popped slot %d, the scan finds %d", trial, step, got, want)
			}
			delete(live, want)
		}
	}
}
