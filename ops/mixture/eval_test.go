package mixture

import (
	"math"
	"testing"
)

// TestEvalMixture checks Prepare and EvalMixture against densities written
// out by hand: a 2D Gaussian with a correlated covariance and a 3D one with
// a diagonal covariance, each weighted, and their sum.
func TestEvalMixture(t *testing.T) {
	// 2D: w = 1.5, μ = (1, −1), Σ = [[2, 0.5], [0.5, 1]]: det 1.75,
	// Σ⁻¹ = [[1, −0.5], [−0.5, 2]] / 1.75; at x = (2, 0), t = (1, 1) and
	// tᵀΣ⁻¹t = (1 − 1 + 2) / 1.75.
	g2 := []float64{1.5, 1, -1, 2, 0.5, 0.5, 1}
	want2 := 1.5 / (2 * math.Pi * math.Sqrt(1.75)) * math.Exp(-0.5*2/1.75)
	// 3D: w = −0.5, μ = 0, Σ = diag(1, 2, 3); at x = (1, 2, 3):
	// tᵀΣ⁻¹t = 1 + 2 + 3.
	g3 := []float64{-0.5, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3}
	want3 := -0.5 * math.Pow(2*math.Pi, -1.5) / math.Sqrt(6) * math.Exp(-3)
	for _, c := range []struct {
		d    int
		mix  []float64
		x    []float64
		want float64
	}{
		{2, g2, []float64{2, 0}, want2},
		{2, append(append([]float64{}, g2...), g2...), []float64{2, 0}, 2 * want2},
		{3, g3, []float64{1, 2, 3}, want3},
	} {
		ps := make([]Prepared[float64], len(c.mix)/PackedLen(c.d))
		PrepareMixture(c.d, c.mix, ps)
		if got := EvalMixture(c.d, ps, c.x); math.Abs(got-c.want) > 1e-15*math.Abs(c.want) {
			t.Errorf("%dD, %d components: %v, want %v", c.d, len(ps), got, c.want)
		}
	}
	if p := Prepare(2, g2); math.Abs(p.Det-1.75) > 1e-15 || math.Abs(float64(p.Inv[1])+0.5/1.75) > 1e-15 {
		t.Errorf("Prepare: det %v, Σ⁻¹[0,1] %v; want 1.75, %v", p.Det, p.Inv[1], -0.5/1.75)
	}
}
