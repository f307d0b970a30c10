package ops

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// countingScale is the CPU's kernels, counting the samples StandardiseScale
// computes.
type countingScale struct {
	device.Kernels[float64]
	samples int
}

func (c *countingScale) StandardiseScale(sd []float64, x []float64, l mixture.Layout) error {
	c.samples += l.B
	return c.Kernels.StandardiseScale(sd, x, l)
}

// TestStandardiseCache checks that the cache gives bitwise the standard
// deviations of the uncached computation for batches that share samples in
// other positions, computes each sample once, and starts again when full.
func TestStandardiseCache(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(31, uint64(d)))
		pool := randomMixture(rng, 5, 2, 6, d).Data().([]float64)
		lp, per := mixture.Layout{B: 5, C: 2, N: 6, D: d}, 2*6*mixture.PackedLen(d)
		batch := func(samples ...int) ([]float64, mixture.Layout) {
			var x []float64
			for _, s := range samples {
				x = append(x, pool[s*per:(s+1)*per]...)
			}
			l := lp
			l.B = len(samples)
			return x, l
		}
		dev := &countingScale{Kernels: cpu.Kernels[float64]{}}
		c := newSDCache()
		for _, step := range []struct {
			samples  []int
			computed int // samples the device computes in this call
		}{{[]int{0, 1, 2}, 3}, {[]int{2, 0, 1}, 0}, {[]int{3, 2, 4, 3}, 3}, {[]int{4, 4}, 0}} {
			x, l := batch(step.samples...)
			got, want := make([]float64, l.Mixtures()), make([]float64, l.Mixtures())
			before := dev.samples
			if err := standardiseScale(c, device.Kernels[float64](dev), got, x, l); err != nil {
				t.Fatal(err)
			}
			cpu.StandardiseScale(want, x, l)
			if !mixture.SameBits(got, want) {
				t.Errorf("D=%d samples %v: cached sd %v, want %v", d, step.samples, got, want)
			}
			if n := dev.samples - before; n != step.computed {
				t.Errorf("D=%d samples %v: %d samples computed, want %d", d, step.samples, n, step.computed)
			}
		}
		// A full cache starts again: with room for 5 samples, two more
		// clear it, and a sample seen before is computed again.
		c.limit = 5
		x, l := batch(0, 1)
		got := make([]float64, l.Mixtures())
		before := dev.samples
		if err := standardiseScale(c, device.Kernels[float64](dev), got, x, l); err != nil {
			t.Fatal(err)
		}
		if n := dev.samples - before; n != 0 || len(c.sd) != 5 {
			t.Errorf("D=%d: %d computed and %d cached, want 0 and 5", d, n, len(c.sd))
		}
		c.limit = 4
		x, l = batch(0)
		c.sd[sdKey{1, 2}] = []float64{1, 2} // an entry of another sample, so the next miss overflows
		delete(c.sd, sampleKey(c, x, l))
		if err := standardiseScale(c, device.Kernels[float64](dev), got[:2], x, l); err != nil {
			t.Fatal(err)
		}
		if len(c.sd) != 1 || !slices.Equal(c.sd[sampleKey(c, x, l)], got[:2]) {
			t.Errorf("D=%d: after overflowing, %d entries, want only the new one", d, len(c.sd))
		}
	}
}
