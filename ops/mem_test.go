package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// memClustered returns a float64 batch whose mixtures consist of `clusters`
// groups of `members` Gaussians, the groups 15 apart, each led by one heavy
// component (|w| ∈ [1.5, 2.5)) and filled with light ones of either sign
// (|w| ∈ [0.1, 0.5)), covariances cs·(A·Aᵀ + 0.3·I).
//
// With np = clusters the initial selection is the set of heavy leaders, one
// per group, and every target's responsibility is 1 for its own leader and
// e^(−hundreds) for the others. Narrow covariances (cs ≈ 0.05) keep the
// likelihood base of a leader against itself above 1, so Σ_s q_is stays far
// above the 1e-5 clamp even for targets holding a large share of the mass
// (with unit covariances a leader's L ≈ 0.07^4 would hit it). The
// responsibilities are then locally constant, so central differences of the
// whole op see no contribution of the detached likelihoods, and the graph
// gradient check compares like with like. (The likelihood-dependent paths
// with partial responsibilities are checked at kernel level in ops/cpu with
// the likelihoods frozen.)
func memClustered(rng *rand.Rand, b, c, clusters, members, d int, cs float64) *tensor.Dense {
	l := mixture.Layout{B: b, C: c, N: clusters * members, D: d}
	x := randomMixture(rng, b, c, l.N, d).Data().([]float64)
	s := l.Stride()
	for m := range l.Mixtures() {
		mx := mixture.Mixture(x, l, m)
		for n := range l.N {
			g := mx[n*s : (n+1)*s]
			cl, member := n%clusters, n/clusters
			if member == 0 {
				g[0] = 1.5 + rng.Float64()
			} else {
				g[0] = 0.1 + 0.4*rng.Float64()
				if rng.IntN(3) == 0 {
					g[0] = -g[0]
				}
			}
			for j := range d {
				g[1+j] *= 0.075 // randomMixture's [-2, 2) shrunk to ±0.15
			}
			g[1] += 15 * float64(cl)
			for j := range g[1+d:] {
				g[1+d+j] *= cs
			}
		}
	}
	return tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(x))
}

func TestMEMGrad(t *testing.T) {
	cases := []struct {
		name              string
		clusters, members int
		np                int
		cs                float64
	}{
		{"clusters", 3, 4, 3, 0.05},
		{"padding", 3, 1, 5, 0.05},
	}
	for _, d := range []int{2, 3} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%dD/%s", d, c.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(d), uint64(ci)))
				x := memClustered(rng, 2, 2, c.clusters, c.members, d, c.cs)
				checkGraphGrad(t, rng, []*tensor.Dense{x}, func(in []*G.Node) (*G.Node, error) {
					return G.ApplyOp(NewMEM(testDev, c.np), in[0])
				}, 0)
			})
		}
	}
}

// TestMEMOp runs the op in float32 and float64 graphs and checks the output
// shape and that both dtypes agree.
func TestMEMOp(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	x64 := randomMixture(rng, 2, 3, 20, 2)
	x32 := as32(x64)
	var outs [2][]float64
	for i, x := range []*tensor.Dense{x64, x32} {
		g := G.NewGraph()
		n := G.NewTensor(g, x.Dtype(), 4, G.WithShape(x.Shape()...), G.WithName("x"), G.WithValue(x))
		y, err := G.ApplyOp(NewMEM(testDev, 4), n)
		if err != nil {
			t.Fatal(err)
		}
		if want := (tensor.Shape{2, 3, 4, 7}); !y.Shape().Eq(want) {
			t.Fatalf("shape %v, want %v", y.Shape(), want)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		switch v := y.Value().Data().(type) {
		case []float64:
			outs[i] = v
		case []float32:
			for _, e := range v {
				outs[i] = append(outs[i], float64(e))
			}
		}
	}
	var diff, scale float64
	for i := range outs[0] {
		diff = math.Max(diff, math.Abs(outs[0][i]-outs[1][i]))
		scale = math.Max(scale, math.Abs(outs[0][i]))
	}
	if diff > 1e-4*scale {
		t.Errorf("float32 and float64 outputs differ by %.3g (scale %.3g)", diff, scale)
	}
}

// TestMEMBadInput checks that bad parameters, shapes and values are errors
// naming the op, the input and what was wrong, never panics.
func TestMEMBadInput(t *testing.T) {
	good := func() *tensor.Dense { return randomMixture(rand.New(rand.NewPCG(1, 1)), 1, 2, 5, 2) }
	set := func(i int, v float64) func(*tensor.Dense) *tensor.Dense {
		return func(x *tensor.Dense) *tensor.Dense { x.Data().([]float64)[i] = v; return x }
	}
	cases := []struct {
		name  string
		np    int
		input func() *tensor.Dense
		want  []string
	}{
		{"np = 0", 0, good, []string{"gm.MEM", "np must be ≥ 1, got 0"}},
		{"np < 0", -3, good, []string{"gm.MEM", "got -3"}},
		{"rank 3", 2, func() *tensor.Dense { return tensor.New(tensor.WithShape(2, 5, 7), tensor.Of(tensor.Float64)) },
			[]string{"gm.MEM", `"mixture"`, "rank 4"}},
		{"D = 1", 2, func() *tensor.Dense { return tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.Of(tensor.Float64)) },
			[]string{"gm.MEM", `"mixture"`, "neither 7 (2D) nor 13 (3D)"}},
		{"no components", 2, func() *tensor.Dense { return tensor.New(tensor.WithShape(1, 1, 0, 7), tensor.Of(tensor.Float64)) },
			[]string{"gm.MEM", `"mixture"`, "N = 0"}},
		{"NaN weight", 2, func() *tensor.Dense { return set(7, math.NaN())(good()) }, []string{"gm.MEM", `"mixture"`, "non-finite", "n=1"}},
		{"Inf position", 2, func() *tensor.Dense { return set(2, math.Inf(1))(good()) }, []string{"gm.MEM", `"mixture"`, "non-finite"}},
		{"non-SPD covariance", 2, func() *tensor.Dense { return set(3, -1)(good()) }, []string{"gm.MEM", `"mixture"`, "not positive definite"}},
		{"int dtype", 2, func() *tensor.Dense { return tensor.New(tensor.WithShape(1, 1, 2, 7), tensor.Of(tensor.Int)) },
			[]string{"gm.MEM", `"mixture"`, "float32 or float64"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := NewMEM(testDev, c.np)
			x := c.input()
			_, err := op.InferShape(x.Shape())
			if err == nil {
				_, err = op.Do(x)
			}
			gmtest.WantErr(t, err, c.want...)
		})
	}
	// The grad op rejects a gradient of the wrong shape or with NaN.
	x := good()
	y, err := NewMEM(testDev, 2).Do(x)
	if err != nil {
		t.Fatal(err)
	}
	grad := gradOf(NewMEM(testDev, 2), 0)
	if _, err := grad.InferShape(x.Shape(), y.(*tensor.Dense).Shape(), tensor.Shape{1, 2, 3, 7}); err == nil || !strings.Contains(err.Error(), `"grad"`) {
		t.Errorf("wrong grad shape: error %v, want one naming input \"grad\"", err)
	}
	g := tensor.New(tensor.WithShape(1, 2, 2, 7), tensor.WithBacking(make([]float64, 28)))
	g.Data().([]float64)[3] = math.NaN()
	if _, err := grad.Do(x, y, g); err == nil || !strings.Contains(err.Error(), "gm.MEMGrad") || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("NaN grad: error %v, want gm.MEMGrad non-finite", err)
	}
}
