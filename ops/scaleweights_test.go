package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"gorgonia.org/tensor"
)

// TestScaleWeightsForward checks that weights are scaled and every other
// packed value passes through unchanged, in float32 and float64.
func TestScaleWeightsForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 0))
	x64 := randomMixture(rng, 2, 3, 4, 3)
	for _, x := range []*tensor.Dense{x64, as32(x64)} {
		y, err := NewScaleWeights(testDev, 0.125).Do(x)
		if err != nil {
			t.Fatal(err)
		}
		in, out := float64s(x), float64s(y)
		for i := range in {
			want := in[i]
			if i%13 == 0 {
				want *= 0.125
			}
			if out[i] != want {
				t.Fatalf("%v: value %d is %g, want %g", x.Dtype(), i, out[i], want)
			}
		}
	}
}

// TestScaleWeightsBadInput checks the errors of gm.ScaleWeights.
func TestScaleWeightsBadInput(t *testing.T) {
	cases := []struct {
		name     string
		s        float64
		x        *tensor.Dense
		contains []string
	}{
		{"NaN scale", math.NaN(), convTensor(41, 2, 3, 4, 7), []string{"scale factor", "NaN"}},
		{"Inf scale", math.Inf(-1), convTensor(42, 2, 3, 4, 7), []string{"scale factor", "-Inf"}},
		{"rank 3", 2, convTensor(43, 3, 4, 7), []string{`"mixture"`, "rank 4", "rank 3"}},
		{"D not 2 or 3", 2, convTensor(44, 2, 3, 4, 8), []string{`"mixture"`, "length 8"}},
		{"zero components", 2, convTensor(45, 2, 3, 0, 13), []string{`"mixture"`, "N = 0"}},
		{"NaN position", 2, convWith(convTensor(46, 2, 3, 4, 7), 7+1, math.NaN()), []string{`"mixture"`, "non-finite"}},
		{"non-SPD covariance", 2, convWith(convTensor(47, 2, 3, 4, 7), 3, -2), []string{`"mixture"`, "not positive definite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewScaleWeights(testDev, c.s).Do(c.x)
			gmtest.WantErr(t, err, append([]string{"gm.ScaleWeights"}, c.contains...)...)
		})
	}
	t.Run("grad shape", func(t *testing.T) {
		x := convTensor(48, 2, 3, 4, 7)
		_, err := gradOf(NewScaleWeights(testDev, 2), 0).Do(x, x, convTensor(49, 2, 3, 5, 7))
		gmtest.WantErr(t, err, "gm.ScaleWeightsGrad", `"grad"`)
	})
}
