package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestIntegrateStandardiseBadInput feeds Integrate and Standardise broken
// inputs; each must return an error naming the op, the input and what was
// wrong, never panic.
func TestIntegrateStandardiseBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	good := func() *tensor.Dense { return randomMixture(rng, 2, 2, 3, 2) }
	poke := func(x *tensor.Dense, i int, v float64) *tensor.Dense { x.Data().([]float64)[i] = v; return x }
	gain := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{1}))
	cases := []struct {
		name     string
		x        *tensor.Dense
		contains []string
	}{
		{"rank 3", tensor.New(tensor.WithShape(2, 3, 7), tensor.Of(tensor.Float64)), []string{`"mixture"`, "rank 4", "rank 3"}},
		{"packed length 8", tensor.New(tensor.WithShape(1, 1, 2, 8), tensor.Of(tensor.Float64)), []string{"length 8", "7 (2D) nor 13 (3D)"}},
		{"zero components", tensor.New(tensor.WithShape(1, 1, 0, 7), tensor.Of(tensor.Float64)), []string{"N = 0"}},
		{"NaN weight", poke(good(), 7, math.NaN()), []string{`"mixture"`, "non-finite", "n=1"}},
		{"Inf position", poke(good(), 1, math.Inf(-1)), []string{"non-finite", "-Inf"}},
		{"indefinite covariance", poke(poke(good(), 3, 1), 6, -1), []string{"not positive definite"}},
	}
	for _, c := range cases {
		for _, op := range []struct {
			name string
			do   func(x *tensor.Dense) error
		}{
			{"gm.Integrate", func(x *tensor.Dense) error { _, err := NewIntegrate(testDev).Do(x); return err }},
			{"gm.Standardise", func(x *tensor.Dense) error { _, err := NewStandardise(testDev).Do(x, gain); return err }},
		} {
			t.Run(op.name+"/"+c.name, func(t *testing.T) {
				err := op.do(c.x)
				if err == nil {
					t.Fatal("no error")
				}
				for _, want := range append([]string{op.name}, c.contains...) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
			})
		}
	}
	t.Run("gm.Standardise/gain shape", func(t *testing.T) {
		_, err := NewStandardise(testDev).Do(good(), tensor.New(tensor.WithShape(2), tensor.Of(tensor.Float64)))
		if err == nil || !strings.Contains(err.Error(), `"gain"`) {
			t.Errorf("error %v does not name the gain", err)
		}
	})
	t.Run("mixed dtypes in a graph", func(t *testing.T) {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 1, 3, 7), G.WithName("x"))
		gn := G.NewTensor(g, tensor.Float64, 1, G.WithShape(1), G.WithName("gain"))
		if _, err := G.ApplyOp(NewStandardise(testDev), x, gn); err == nil {
			t.Error("float32 mixture with a float64 gain was accepted")
		}
	})
}
