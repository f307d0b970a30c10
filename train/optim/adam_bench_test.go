package optim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// BenchmarkAdamStep times one Adam step over the learnables of the paper's
// MNIST model in float32: per kernel its weights, positions and covariance
// factors (16,680 Gaussians in all, 116,760 values).
func BenchmarkAdamStep(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var params []G.ValueGrad
	for _, g := range []int{8 * 1 * 5, 16 * 8 * 5, 32 * 16 * 5, 64 * 32 * 5, 10 * 64 * 5} { // Gaussians per kernel
		for _, per := range []int{1, 2, 4} { // weights, positions, 2×2 factors
			w, d := make([]float32, g*per), make([]float32, g*per)
			for i := range w {
				w[i] = rng.Float32()
			}
			params = append(params, param{dense(w...), dense(d...)})
		}
	}
	b.Run(fmt.Sprintf("paper_%dparams", len(params)), func(b *testing.B) {
		a := NewAdam(1e-3)
		for b.Loop() {
			for _, p := range params { // a gradient to apply: Step zeroes it
				g := p.(param).g.Data().([]float32)
				for i := range g {
					g[i] = 0.01
				}
			}
			if err := a.Step(params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
