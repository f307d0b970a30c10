package gmnode

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestReLUFit runs ReLUFit in a graph on a single positive Gaussian and a
// single negative one, whose fitted weights have closed forms: with
// n0 = N(0; 0, Σ) and x = max(a, 0) + 0.1, a″ = x(max(a·n0, 0) + 0.05)/(x·n0 + 0.05).
func TestReLUFit(t *testing.T) {
	l := mixture.Layout{B: 1, C: 2, N: 1, D: 2}
	cov := []float64{0.5, 0.1, 0.1, 0.3}
	gs := []mixture.Gaussian{
		{Weight: 0.8, Position: []float64{1, -1}, Covariance: cov},
		{Weight: -0.6, Position: []float64{0, 2}, Covariance: cov},
	}
	xd, err := mixture.Pack[float64](l, gs)
	if err != nil {
		t.Fatal(err)
	}
	g := newGraph()
	x := valueNode(g, "x", xd, l.Shape()...)
	y, err := ReLUFit(x)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	out := y.Value().Data().([]float64)
	n0 := 1 / (2 * math.Pi * math.Sqrt(cov[0]*cov[3]-cov[1]*cov[2]))
	for c, a := range []float64{0.8, -0.6} {
		xc := max(a, 0) + 0.1
		want := xc * (max(a*n0, 0) + 0.05) / (xc*n0 + 0.05)
		if got := out[l.Offset(0, c, 0)]; math.Abs(got-want) > 1e-14 {
			t.Errorf("channel %d: weight %v, want %v", c, got, want)
		}
	}
	if _, err := ReLUFit(x, ops.ReLUFitOptions{}, ops.ReLUFitOptions{}); err == nil || !strings.Contains(err.Error(), "at most one") {
		t.Errorf("two option sets: error %v", err)
	}
	if _, err := ReLUFit(x, ops.ReLUFitOptions{Epsilon: -1}); err == nil || !strings.Contains(err.Error(), "Epsilon") {
		t.Errorf("negative epsilon: error %v", err)
	}
}

// TestReLUFitConstant runs ReLUFitConstant in a graph on single Gaussians
// with constants of both signs, against the closed forms: with
// n0 = N(0; 0, Σ), t = a·n0 + κ, b = max(t, 0) − κ⁺, the coarse weight
// x = |a| + 0.1 where a + κ > 0 and κ⁺ + 0.1 elsewhere, and e = x·n0,
// a″ = x(b + 0.05)/(e + 0.05); the new constants are max(κ, 0).
func TestReLUFitConstant(t *testing.T) {
	l := mixture.Layout{B: 2, C: 2, N: 1, D: 2}
	cov := []float64{0.5, 0.1, 0.1, 0.3}
	weights := []float64{0.8, -0.6, -0.2, 0.3}
	kappas := []float64{0.3, 0.4, 0.5, -0.5}
	gs := make([]mixture.Gaussian, len(weights))
	for i, w := range weights {
		gs[i] = mixture.Gaussian{Weight: w, Position: []float64{float64(i), -1}, Covariance: cov}
	}
	xd, err := mixture.Pack[float64](l, gs)
	if err != nil {
		t.Fatal(err)
	}
	g := newGraph()
	x := valueNode(g, "x", xd, l.Shape()...)
	kappa := valueNode(g, "kappa", kappas, 2, 2)
	y, kappaOut, err := ReLUFitConstant(x, kappa)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	out, kout := y.Value().Data().([]float64), kappaOut.Value().Data().([]float64)
	n0 := 1 / (2 * math.Pi * math.Sqrt(cov[0]*cov[3]-cov[1]*cov[2]))
	for m, a := range weights {
		k := kappas[m]
		xc := max(k, 0) + 0.1
		if a+k > 0 {
			xc = math.Abs(a) + 0.1
		}
		b := max(a*n0+k, 0) - max(k, 0)
		want := xc * (b + 0.05) / (xc*n0 + 0.05)
		if got := out[m*l.Stride()]; math.Abs(got-want) > 1e-14 {
			t.Errorf("mixture %d (a=%g, κ=%g): weight %v, want %v", m, a, k, got, want)
		}
		if kout[m] != max(k, 0) {
			t.Errorf("mixture %d: new constant %v, want max(%g, 0)", m, kout[m], k)
		}
	}
	if _, _, err := ReLUFitConstant(x, kappa, ops.ReLUFitOptions{}, ops.ReLUFitOptions{}); err == nil || !strings.Contains(err.Error(), "gm.ReLUFitConstant: at most one") {
		t.Errorf("two option sets: error %v", err)
	}
	bad := G.NewMatrix(g, tensor.Float64, G.WithName("bad"), G.WithShape(2, 3))
	if _, _, err := ReLUFitConstant(x, bad); err == nil || !strings.Contains(err.Error(), `input "constant" must have shape (2, 2), got (2, 3)`) {
		t.Errorf("constants of the wrong shape: error %v", err)
	}
}

// TestReLUFitConstantKink checks the derivative of the new constant
// max(κ, 0): 1 for κ > 0 and 0 for κ ≤ 0, κ = 0 included, as the fit takes
// it.
func TestReLUFitConstantKink(t *testing.T) {
	g := newGraph()
	unit := []float64{0.5, 0, 0, 1, 0, 0, 1} // w = 0.5, μ = 0, Σ = I
	x := valueNode(g, "x", slices.Concat(unit, unit, unit, unit), 1, 4, 1, 7)
	kappa := valueNode(g, "kappa", []float64{0.3, 0, -0.2, 0}, 1, 4)
	_, kappaOut, err := ReLUFitConstant(x, kappa)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(G.Must(G.Sum(kappaOut)), kappa)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	if got := grads[0].Value().Data().([]float64); !slices.Equal(got, []float64{1, 0, 0, 0}) {
		t.Errorf("∂ max(κ, 0)/∂κ at κ = (0.3, 0, −0.2, 0): %v, want (1, 0, 0, 0)", got)
	}
}

// TestReLUFitConstantGraphGrad checks both outputs of ReLUFitConstant, the
// fit and the new constants (flattened into one vector, so that the graph
// has one output), against central differences in a graph, with respect to
// the mixtures and the constants (none of them near 0, where max(κ, 0) has
// its kink), 2D and 3D.
func TestReLUFitConstantGraphGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(12, uint64(d)))
		s := gmtest.Spec{WeightMin: 0.2, WeightMax: 1, NegativeOneIn: 2, Spread: 1.5, CovScale: 0.3, CovDiag: 0.2}
		x := tensor.New(tensor.WithShape(2, 2, 4, 1+d+d*d), tensor.WithBacking(gmtest.Mixtures[float64](rng, s, 2, 2, 4, d)))
		kappa := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0.45, -0.35, 0.3, -0.55}))
		graphGrad(t, rng, []*tensor.Dense{x, kappa}, func(in []*G.Node) (*G.Node, error) {
			fit, kappaOut, err := ReLUFitConstant(in[0], in[1])
			if err != nil {
				return nil, err
			}
			return G.Concat(0, flat(fit), flat(kappaOut))
		}, 0, 1)
	}
}

// flat returns n reshaped to a vector.
func flat(n *G.Node) *G.Node {
	return G.Must(G.Reshape(n, tensor.Shape{n.Shape().TotalSize()}))
}
