package gmnode

import (
	"math"
	"strings"
	"testing"

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
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(xd))))
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
