package gmnode

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestEvaluate runs Evaluate in a graph with gradients and checks the value
// of a single standard 2D Gaussian against N(0; 0, I) = 1/(2π) and its
// gradient at a point on the x axis: ∂y/∂p = −y·p.
func TestEvaluate(t *testing.T) {
	g := newGraph()
	x := valueNode(g, "x", []float64{2, 0, 0, 1, 0, 0, 1}, 1, 1, 1, 7)
	p := valueNode(g, "p", []float64{0, 0, 1, 0}, 1, 1, 2, 2)
	y, err := Evaluate(x, p)
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Sum(y))
	grads, err := G.Grad(cost, p)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	got := y.Value().Data().([]float64)
	want := []float64{2 / (2 * math.Pi), 2 * math.Exp(-0.5) / (2 * math.Pi)}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("y[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	dp := grads[0].Value().Data().([]float64)
	wantDp := []float64{0, 0, -want[1], 0}
	for i := range wantDp {
		if math.Abs(dp[i]-wantDp[i]) > 1e-12 {
			t.Errorf("∂y/∂p[%d] = %v, want %v", i, dp[i], wantDp[i])
		}
	}
}
