package gmnode

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestTreeHEMNode runs gmnode.TreeHEM in a graph, with and without the
// reference under-fill option, and counts the non-zero output components;
// the under-fill padding must be {0, 0, s·I} with s = 0.5, the mean
// covariance trace per dimension of the input.
func TestTreeHEMNode(t *testing.T) {
	const n, np = 40, 8
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]float64, n*7)
	for k := range n {
		g := data[k*7 : (k+1)*7]
		g[0], g[1], g[2] = 0.5+rng.Float64(), 4*rng.Float64(), 4*rng.Float64()
		g[3], g[6] = 0.5, 0.5
	}
	for _, c := range []struct {
		opts    []TreeHEMOption
		lo, max int
	}{{nil, np, np}, {[]TreeHEMOption{TreeHEMReferenceUnderFill()}, np - 2, np - 1}} {
		g := newGraph()
		x := valueNode(g, "x", data, 1, 1, n, 7)
		y, err := TreeHEM(x, np, 2, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		runGraph(t, g)
		if !y.Shape().Eq(tensor.Shape{1, 1, np, 7}) {
			t.Fatalf("shape %v", y.Shape())
		}
		out := y.Value().Data().([]float64)
		nz := 0
		for k := 0; k < len(out); k += 7 {
			if out[k] != 0 {
				nz++
			} else if pad := out[k : k+7]; !slices.Equal(pad, []float64{0, 0, 0, 0.5, 0, 0, 0.5}) {
				t.Errorf("options %d: padding %v, want {0, 0, 0.5·I}", len(c.opts), pad)
			}
		}
		if nz < c.lo || nz > c.max {
			t.Errorf("options %d: %d non-zero components, want [%d, %d]", len(c.opts), nz, c.lo, c.max)
		}
	}
	if _, err := TreeHEM(G.NewTensor(newGraph(), tensor.Float64, 4, G.WithShape(1, 1, n, 7), G.WithName("x")), 1, 2); err == nil {
		t.Errorf("Np = 1 < T = 2: no error")
	}
}
