package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"gorgonia.org/tensor"
)

// TestStandardiseGradMixtureFrozenSD checks ∂L/∂mixture with sd frozen: the
// reference detaches sd, so finite differences must hold it fixed too.
func TestStandardiseGradMixtureFrozenSD(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(9, uint64(d)))
		xt := randomMixture(rng, 2, 2, 3, d)
		x := xt.Data().([]float64)
		l, _ := mixture.LayoutOf(xt.Shape())
		sd := make([]float64, l.Mixtures())
		cpu.StandardiseScale(sd, x, l)
		r := gmtest.Normal(rng, len(x))
		y := make([]float64, len(x))
		loss := func() float64 { cpu.Standardise(y, x, sd, 1.3, l); return gmtest.Dot(y, r) }
		dx := make([]float64, len(x))
		cpu.StandardiseBackward(dx, x, r, sd, 1.3, l)
		gmtest.WantGrad(t, fmt.Sprintf("D=%d", d), dx, x, loss)
	}
}

// TestStandardiseUnitSD checks the property the op exists for: after it, the
// mixture's values over the sampling grid have standard deviation gain.
func TestStandardiseUnitSD(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(8, uint64(d)))
		x := randomMixture(rng, 3, 1, 5, d)
		l, _ := mixture.LayoutOf(x.Shape())
		gain := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{2}))
		y, err := NewStandardise(testDev).Do(x, gain)
		if err != nil {
			t.Fatal(err)
		}
		sd := make([]float64, l.Mixtures())
		cpu.StandardiseScale(sd, y.Data().([]float64), l)
		for m, v := range sd {
			if math.Abs(v-2) > 1e-9 {
				t.Errorf("D=%d mixture %d: standard deviation after standardising %g, want the gain 2", d, m, v)
			}
		}
	}
}
