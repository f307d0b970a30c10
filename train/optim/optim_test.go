package optim

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// param is a parameter value with its accumulated gradient.
type param struct{ w, g *tensor.Dense }

func (p param) Value() G.Value                        { return p.w }
func (p param) Grad() (G.Value, error)                { return p.g, nil }
func dense[T float32 | float64](v ...T) *tensor.Dense { return tensor.New(tensor.WithBacking(v)) }

// TestAdamFirstStep checks Adam's first step, where the bias-corrected
// moments are g and g², so every value moves by lr·g/(|g|+ε), and that the
// gradient is zeroed; a step with another parameter count is an error.
func TestAdamFirstStep(t *testing.T) {
	a := NewAdam(0.1)
	p64 := param{dense(1.0, -2), dense(0.5, -0.25)}
	p32 := param{dense[float32](3, 0), dense[float32](-4, 0)}
	if err := a.Step([]G.ValueGrad{p64, p32}); err != nil {
		t.Fatal(err)
	}
	want64 := []float64{1 - 0.1*0.5/(0.5+1e-8), -2 + 0.1*0.25/(0.25+1e-8)}
	for i, w := range p64.w.Data().([]float64) {
		if math.Abs(w-want64[i]) > 1e-15 {
			t.Errorf("float64 value %d: %v, want %v", i, w, want64[i])
		}
	}
	if w := p32.w.Data().([]float32)[0]; w != float32(3+0.1*4/(4+1e-8)) {
		t.Errorf("float32 value: %v, want %v", w, float32(3+0.1*4/(4+1e-8)))
	}
	if g := p64.g.Data().([]float64); g[0] != 0 || g[1] != 0 || p32.g.Data().([]float32)[0] != 0 || a.Steps != 1 {
		t.Errorf("after the step: gradients %v %v, %d steps", g, p32.g.Data(), a.Steps)
	}
	if err := a.Step([]G.ValueGrad{p64}); err == nil || !strings.Contains(err.Error(), "state holds 2 parameters, step got 1") {
		t.Errorf("step with one parameter: %v", err)
	}
}

// TestAdamSteps checks three steps on parameters longer than one work item
// (adamChunkLen) against Adam's formulas applied value by value, bitwise.
func TestAdamSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 2*adamChunkLen + 17
	w32, w64 := make([]float32, n), make([]float64, n)
	for i := range n {
		w32[i], w64[i] = rng.Float32(), rng.NormFloat64()
	}
	p32, p64 := param{dense(slices.Clone(w32)...), dense(make([]float32, n)...)}, param{dense(slices.Clone(w64)...), dense(make([]float64, n)...)}
	a := NewAdam(0.01)
	m32, v32, m64, v64 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for step := 1; step <= 3; step++ {
		g32, g64 := p32.g.Data().([]float32), p64.g.Data().([]float64)
		for i := range n {
			g32[i], g64[i] = float32(rng.NormFloat64()), rng.NormFloat64()
		}
		// Variables, not constants: 1 − β must round as it does at run time.
		b1, b2 := 0.9, 0.999
		c1, c2 := 1-math.Pow(b1, float64(step)), 1-math.Pow(b2, float64(step))
		want := func(g float64, m, v *float64) float64 {
			*m = b1**m + (1-b1)*g
			*v = b2**v + (1-b2)*g*g
			return 0.01 * (*m / c1) / (math.Sqrt(*v/c2) + 1e-8)
		}
		for i := range n {
			w32[i] -= float32(want(float64(g32[i]), &m32[i], &v32[i]))
			w64[i] -= want(g64[i], &m64[i], &v64[i])
		}
		if err := a.Step([]G.ValueGrad{p32, p64}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p32.w.Data().([]float32), w32) || !slices.Equal(p64.w.Data().([]float64), w64) {
			t.Fatalf("step %d differs from the formulas", step)
		}
		if slices.ContainsFunc(g32, func(g float32) bool { return g != 0 }) || slices.ContainsFunc(g64, func(g float64) bool { return g != 0 }) {
			t.Fatalf("step %d left a gradient non-zero", step)
		}
	}
}

// TestAdamStepFails checks that a step with a bad parameter changes
// nothing: not the parameters before it, not their gradients, not the state.
func TestAdamStepFails(t *testing.T) {
	a := NewAdam(0.1)
	good := param{dense(1.0, 2), dense(0.5, 0.5)}
	if err := a.Step([]G.ValueGrad{good, param{dense(1.0), dense(1.0)}}); err != nil {
		t.Fatal(err)
	}
	w, g := slices.Clone(good.w.Data().([]float64)), []float64{0.25, -0.25}
	copy(good.g.Data().([]float64), g)
	m := slices.Clone(a.M[0])
	bad := param{dense(1.0), dense[float32](1)}
	err := a.Step([]G.ValueGrad{good, bad})
	if err == nil || !strings.Contains(err.Error(), "parameter 1 has dtype float64 and gradient float32") {
		t.Fatalf("step with a float32 gradient of a float64 parameter: %v", err)
	}
	if !slices.Equal(good.w.Data().([]float64), w) || !slices.Equal(good.g.Data().([]float64), g) || !slices.Equal(a.M[0], m) || a.Steps != 1 {
		t.Errorf("the failed step changed parameter 0 %v (gradient %v), its first moment %v or the step count %d", good.w.Data(), good.g.Data(), a.M[0], a.Steps)
	}
}

// TestPlateau follows ReduceLROnPlateau in "max" mode with the reference's
// settings: after two epochs without relative improvement the rate drops
// tenfold, the next epoch is cooldown, and it never goes below MinLR.
func TestPlateau(t *testing.T) {
	p := NewPlateau()
	lr := 1.0
	var got []float64
	for _, acc := range []float64{0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.7, 0.70001, 0.7} {
		lr = p.Observe(acc, lr)
		got = append(got, lr)
	}
	want := []float64{1, 1, 1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.010000000000000002}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("learning rates %v, want %v", got, want)
		}
	}
	p = NewPlateau()
	lr = 2e-7
	for range 10 {
		lr = p.Observe(0.5, lr)
	}
	if lr != p.MinLR {
		t.Errorf("learning rate %v after a long plateau, want MinLR %v", lr, p.MinLR)
	}
}

// TestWeightDecay compares the step with lr times a central-difference
// gradient of the decay loss mean(w²) + mean((AAᵀ−I)²) over two 2D kernels.
func TestWeightDecay(t *testing.T) {
	w := []float64{0.3, -1.2, 0.7}
	a := []float64{1.1, 0.2, -0.3, 0.9, 0.5, 0, 0.4, 1.3}
	loss := func(w, a []float64) float64 {
		var lw, la float64
		for _, v := range w {
			lw += v * v
		}
		for k := 0; k < len(a); k += 4 {
			for r := range 2 {
				for c := range 2 {
					e := a[k+2*r]*a[k+2*c] + a[k+2*r+1]*a[k+2*c+1]
					if r == c {
						e--
					}
					la += e * e
				}
			}
		}
		return lw/float64(len(w)) + la/float64(len(a))
	}
	const lr, h = 0.01, 1e-6
	grad := func(v []float64, i int) float64 {
		x := v[i]
		v[i] = x + h
		up := loss(w, a)
		v[i] = x - h
		down := loss(w, a)
		v[i] = x
		return (up - down) / (2 * h)
	}
	var want []float64
	for i := range w {
		want = append(want, w[i]-lr*grad(w, i))
	}
	for i := range a {
		want = append(want, a[i]-lr*grad(a, i))
	}
	if err := WeightDecay(ops.CPU().F64, w, a, 2, lr); err != nil {
		t.Fatal(err)
	}
	for i, v := range append(w, a...) {
		if math.Abs(v-want[i]) > 1e-9 {
			t.Errorf("value %d after the step: %v, want %v", i, v, want[i])
		}
	}
}
