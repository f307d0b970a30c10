package ops

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkCovScale measures the CovScaleNorm ops (forward including input
// validation, and backward) on a float32 batch of the size of a ModelNet
// layer output.
func BenchmarkCovScale(b *testing.B) {
	const bs, c, n, d = 21, 16, 2560, 2
	x64 := randomMixture(rand.New(rand.NewPCG(35, 0)), bs, c, n, d)
	x := as32(x64)
	g := x.Clone().(*tensor.Dense)
	size := fmt.Sprintf("%dD_B%d_C%d_N%d_f32", d, bs, c, n)
	running, _ := NewCovScaleNorm(testDev, c)
	running.SetTraining(true)
	for _, v := range []struct {
		name string
		fwd  G.Op
	}{
		{"PerSample", NewCovScale(testDev)},
		{"Running", running},
	} {
		y, err := v.fwd.Do(x)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(v.name+"Forward/"+size, func(b *testing.B) {
			op := v.fwd
			for b.Loop() {
				if _, err := op.Do(x); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(v.name+"Backward/"+size, func(b *testing.B) {
			op := gradOf(v.fwd, 0)
			for b.Loop() {
				if _, err := op.Do(x, y, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
