package gmnode

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// covscaleInput returns a float32 batch [b, c, n, 7] with covariances s·I of
// random sizes s ∈ [0.5, 4.5).
func covscaleInput(rng *rand.Rand, b, c, n int) *tensor.Dense {
	l := mixture.Layout{B: b, C: c, N: n, D: 2}
	x := make([]float32, l.Len())
	for i := 0; i < len(x); i += 7 {
		s := float32(0.5 + 4*rng.Float64())
		copy(x[i:i+7], []float32{float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64()), s, 0, 0, s})
	}
	return tensor.New(tensor.WithShape(l.Shape()...), tensor.WithBacking(x))
}

func covscaleMeanTrace(y []float32, l mixture.Layout) []float64 {
	tau := make([]float64, l.Mixtures())
	for m := range tau {
		mx := mixture.Mixture(y, l, m)
		for k := 0; k < len(mx); k += 7 {
			tau[m] += float64(mx[k+3]+mx[k+6]) / float64(l.N)
		}
	}
	return tau
}

// TestCovScaleNodes runs both CovScale variants in one float32 graph: the
// per-sample one must give mean trace 2 everywhere, the running one in
// evaluation mode with τ̄ = 2 must halve every trace.
func TestCovScaleNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 0))
	l := mixture.Layout{B: 3, C: 4, N: 6, D: 2}
	xv := covscaleInput(rng, l.B, l.C, l.N)
	g := newGraph()
	x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(l.Shape()...), G.WithName("x"), G.WithValue(xv))
	ys, err := CovScale(x)
	if err != nil {
		t.Fatal(err)
	}
	yr, op, err := CovScaleNorm(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.SetRunning([]float64{2, 2, 2, 2}); err != nil {
		t.Fatal(err)
	}
	runGraph(t, g, G.EvalMode())
	for m, v := range covscaleMeanTrace(ys.Value().Data().([]float32), l) {
		if math.Abs(v-2) > 1e-5 {
			t.Errorf("per-sample: mixture %d has mean trace %g, want 2", m, v)
		}
	}
	in := covscaleMeanTrace(xv.Data().([]float32), l)
	for m, v := range covscaleMeanTrace(yr.Value().Data().([]float32), l) {
		if math.Abs(v-in[m]) > 1e-5*in[m] {
			t.Errorf("running: mixture %d has mean trace %g, want %g (τ̄ = D leaves it)", m, v, in[m])
		}
	}
	if got := op.Running(); got[0] != 2 {
		t.Errorf("evaluation changed the running average to %v", got)
	}
}

func TestCovScaleNormNodeBadInput(t *testing.T) {
	g := newGraph()
	x := G.NewTensor(g, tensor.Float32, 3, G.WithShape(2, 3, 7), G.WithName("x3"))
	if _, _, err := CovScaleNorm(x); err == nil || !strings.Contains(err.Error(), "rank 4") || !strings.Contains(err.Error(), "x3") {
		t.Errorf("rank-3 input: error %v, want one naming the input and rank 4", err)
	}
	y := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 1, 8), G.WithName("x8"))
	if _, _, err := CovScaleNorm(y); err == nil || !strings.Contains(err.Error(), "gm.CovScaleNorm") || !strings.Contains(err.Error(), "length 8") {
		t.Errorf("packed length 8: error %v, want one from gm.CovScaleNorm about the length", err)
	}
	if _, err := NewCovScaleNorm(newGraph(), -1); err == nil {
		t.Error("NewCovScaleNorm(newGraph(), -1) gave no error")
	}
}
