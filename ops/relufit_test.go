package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// relufitStableMixture returns a random float64 batch whose weights are at
// least 0.2 away from 0 and whose target t_k = Σ_j a_j N(μ_k; μ_j, Σ_j) is
// at least 1e-3 away from 0 at every centroid, so the masks a > 0 and t > 0
// cannot flip under the finite-difference steps.
func relufitStableMixture(t *testing.T, rng *rand.Rand, b, c, n, d int) *tensor.Dense {
	t.Helper()
	l := mixture.Layout{B: b, C: c, N: n, D: d}
	st := l.Stride()
	ps := make([]cpu.Prepared[float64], n)
outer:
	for range 100 {
		x := randomMixture(rng, b, c, n, d)
		data := x.Data().([]float64)
		for i := 0; i < len(data); i += st {
			data[i] = math.Copysign(0.2+0.8*math.Abs(data[i]), data[i])
		}
		for m := range l.Mixtures() {
			mx := mixture.Mixture(data, l, m)
			cpu.PrepareMixture(d, mx, ps)
			for k := range n {
				if math.Abs(cpu.EvalMixture(d, ps, mx[k*st+1:k*st+1+d])) < 1e-3 {
					continue outer
				}
			}
		}
		return x
	}
	t.Fatalf("no stable input for [%d %d %d] D=%d", b, c, n, d)
	return nil
}

// TestReLUFitGraphGrad checks the op's symbolic gradient in a Gorgonia graph
// against central differences, for weights, positions and covariances, in
// 2D and 3D and for both variants.
func TestReLUFitGraphGrad(t *testing.T) {
	for _, opts := range []ReLUFitOptions{{}, {Variant: device.ReLUFitPaper}} {
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("variant%d_%dD", opts.Variant, d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, uint64(d)))
				x := relufitStableMixture(t, rng, 2, 2, 5, d)
				checkGraphGrad(t, rng, []*tensor.Dense{x}, func(in []*G.Node) (*G.Node, error) {
					return G.ApplyOp(NewReLUFit(opts), in[0])
				}, 0)
			})
		}
	}
}

// TestReLUFitOpFloat32 runs the op in both precisions and compares.
func TestReLUFitOpFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(4, uint64(d)))
		x := randomMixture(rng, 2, 3, 17, d)
		x64 := x.Data().([]float64)
		x32 := gmtest.To32(x64)
		op := NewReLUFit(ReLUFitOptions{})
		y64, err := op.Do(x)
		if err != nil {
			t.Fatal(err)
		}
		y32, err := op.Do(tensor.New(tensor.WithShape(x.Shape()...), tensor.WithBacking(x32)))
		if err != nil {
			t.Fatal(err)
		}
		a, b := y32.Data().([]float32), y64.Data().([]float64)
		for i := range a {
			if math.Abs(float64(a[i])-b[i]) > 1e-5*math.Max(1, math.Abs(b[i])) {
				t.Fatalf("D=%d: y[%d] float32 %v, float64 %v", d, i, a[i], b[i])
			}
		}
	}
}

// TestReLUFitOpErrors checks that bad input is reported by the op, naming
// the op, the input and what was wrong, and never panics.
func TestReLUFitOpErrors(t *testing.T) {
	good := func() *tensor.Dense { return randomMixture(rand.New(rand.NewPCG(5, 5)), 1, 2, 3, 2) }
	edit := func(f func(x []float64)) *tensor.Dense {
		x := good()
		f(x.Data().([]float64))
		return x
	}
	l := mixture.Layout{B: 1, C: 2, N: 3, D: 2}
	cases := []struct {
		name string
		opts ReLUFitOptions
		x    *tensor.Dense
		want []string
	}{
		{"rank 3", ReLUFitOptions{}, tensor.New(tensor.WithShape(2, 3, 7), tensor.Of(tensor.Float64)),
			[]string{"gm.ReLUFit", `"mixture"`, "rank 4"}},
		{"packed length 8", ReLUFitOptions{}, tensor.New(tensor.WithShape(1, 2, 3, 8), tensor.Of(tensor.Float64)),
			[]string{"gm.ReLUFit", `"mixture"`, "neither 7 (2D) nor 13 (3D)"}},
		{"no components", ReLUFitOptions{}, tensor.New(tensor.WithShape(1, 2, 0, 7), tensor.Of(tensor.Float64)),
			[]string{"gm.ReLUFit", `"mixture"`, "N = 0"}},
		{"NaN weight", ReLUFitOptions{}, edit(func(x []float64) { x[l.Offset(0, 1, 2)] = math.NaN() }),
			[]string{"gm.ReLUFit", `"mixture"`, "(b=0, c=1, n=2)", "non-finite"}},
		{"Inf position", ReLUFitOptions{}, edit(func(x []float64) { x[l.Offset(0, 0, 1)+1] = math.Inf(1) }),
			[]string{"gm.ReLUFit", `"mixture"`, "(b=0, c=0, n=1)", "non-finite"}},
		{"indefinite covariance", ReLUFitOptions{}, edit(func(x []float64) {
			c := x[l.Offset(0, 1, 0)+3:]
			c[0], c[1], c[2], c[3] = 1, 2, 2, 1
		}), []string{"gm.ReLUFit", `"mixture"`, "(b=0, c=1, n=0)", "not positive definite"}},
		{"negative offset", ReLUFitOptions{Offset: -0.5}, good(),
			[]string{"gm.ReLUFit", "ReLUFitOptions.Offset", "-0.5"}},
		{"unknown variant", ReLUFitOptions{Variant: 9}, good(),
			[]string{"gm.ReLUFit", "Variant 9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := NewReLUFit(c.opts)
			_, errShape := op.InferShape(c.x.Shape())
			_, errDo := op.Do(c.x)
			if errShape != nil { // value errors only show when the op runs
				gmtest.WantErr(t, errShape, c.want...)
			}
			gmtest.WantErr(t, errDo, c.want...)
		})
	}
}

// TestReLUFitGradOpErrors checks the gradient op's own checks.
func TestReLUFitGradOpErrors(t *testing.T) {
	x := randomMixture(rand.New(rand.NewPCG(6, 6)), 1, 2, 3, 3)
	gradOp := gradOf(NewReLUFit(ReLUFitOptions{}), 0)
	nan := x.Clone().(*tensor.Dense)
	nan.Data().([]float64)[4] = math.NaN()
	short := tensor.New(tensor.WithShape(1, 2, 2, 13), tensor.Of(tensor.Float64))
	for _, c := range []struct {
		name         string
		out, grad    *tensor.Dense
		want1, want2 string
	}{
		{"NaN gradient", x, nan, `"grad"`, "non-finite"},
		{"gradient shape", x, short, `"grad"`, "shape"},
	} {
		_, err := gradOp.Do(x, c.out, c.grad)
		if err == nil || !strings.Contains(err.Error(), "gm.ReLUFitGrad") || !strings.Contains(err.Error(), c.want1) || !strings.Contains(err.Error(), c.want2) {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
}
