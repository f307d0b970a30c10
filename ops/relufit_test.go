package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// relufitStableMixture returns a random float64 batch whose weights are at
// least 0.2 away from 0 and whose decisions with the constants kappa (one
// per mixture, nil for none) are at least 1e-3 away from flipping: the
// target t_k = Σ_j a_j N(μ_k; μ_j, Σ_j) + κ at every centroid and a_j + κ
// for every weight. The masks of the fit then cannot flip under the
// finite-difference steps.
func relufitStableMixture(t *testing.T, rng *rand.Rand, b, c, n, d int, kappa []float64) *tensor.Dense {
	t.Helper()
	l := mixture.Layout{B: b, C: c, N: n, D: d}
	st := l.Stride()
	ps := make([]mixture.Prepared[float64], n)
outer:
	for range 100 {
		x := randomMixture(rng, b, c, n, d)
		data := x.Data().([]float64)
		for i := 0; i < len(data); i += st {
			data[i] = math.Copysign(0.2+0.8*math.Abs(data[i]), data[i])
		}
		for m := range l.Mixtures() {
			var k float64
			if kappa != nil {
				k = kappa[m]
			}
			mx := mixture.Mixture(data, l, m)
			mixture.PrepareMixture(d, mx, ps)
			for j := range n {
				if math.Abs(mixture.EvalMixture(d, ps, mx[j*st+1:j*st+1+d])+k) < 1e-3 || math.Abs(mx[j*st]+k) < 1e-3 {
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
// 2D and 3D, for both variants and the refined fit.
func TestReLUFitGraphGrad(t *testing.T) {
	for _, opts := range []ReLUFitOptions{{}, {Variant: device.ReLUFitPaper}, {Refine: true}} {
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("variant%d_refine%v_%dD", opts.Variant, opts.Refine, d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, uint64(d)))
				x := relufitStableMixture(t, rng, 2, 2, 5, d, nil)
				checkGraphGrad(t, rng, []*tensor.Dense{x}, func(in []*G.Node) (*G.Node, error) {
					return G.ApplyOp(NewReLUFit(testDev, opts), in[0])
				}, 0)
			})
		}
	}
}

// TestReLUFitConstantGraphGrad checks both gradients of the fit with
// constants, ∂L/∂mixture and ∂L/∂constant, in a Gorgonia graph against
// central differences: 2D and 3D, both variants, constants all positive,
// all negative and of mixed signs (with one exactly 0, a kink of the fit,
// whose ∂L/∂κ the kernel tests check against one-sided differences; here
// ∂L/∂mixture is checked for it), and the refined fit with the negative
// constants it accepts.
func TestReLUFitConstantGraphGrad(t *testing.T) {
	for _, opts := range []ReLUFitOptions{{}, {Variant: device.ReLUFitPaper}, {Refine: true}} {
		for _, d := range []int{2, 3} {
			for _, c := range []struct {
				name  string
				kappa []float64
			}{
				{"positive", []float64{0.35, 0.6, 0.25, 0.5}},
				{"negative", []float64{-0.35, -0.6, -0.25, -0.5}},
				{"mixed", []float64{0.45, -0.3, 0.3, -0.5}},
				{"zero", []float64{0, 0.4, 0, -0.4}},
			} {
				if opts.Refine && c.name != "negative" {
					continue
				}
				t.Run(fmt.Sprintf("variant%d_refine%v_%dD_%s", opts.Variant, opts.Refine, d, c.name), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(3, uint64(d)))
					x := relufitStableMixture(t, rng, 2, 2, 5, d, c.kappa)
					kappa := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(slices.Clone(c.kappa)))
					wrt := []int{0, 1}
					if slices.Contains(c.kappa, 0) {
						wrt = wrt[:1]
					}
					checkGraphGrad(t, rng, []*tensor.Dense{x, kappa}, func(in []*G.Node) (*G.Node, error) {
						return G.ApplyOp(NewReLUFitConstant(testDev, opts), in[0], in[1])
					}, wrt...)
				})
			}
		}
	}
}

// TestReLUFitTargetsGraphGrad checks every gradient of the fit to given
// targets in a Gorgonia graph against central differences: ∂L/∂mixture,
// ∂L/∂targets and, with constants, ∂L/∂constant, in 2D and 3D, for both
// variants. The targets are at least 0.05 away from −κ and the weights from
// 0 and −κ, so no decision flips under the steps.
func TestReLUFitTargetsGraphGrad(t *testing.T) {
	for _, opts := range []ReLUFitOptions{{}, {Variant: device.ReLUFitPaper}} {
		for _, d := range []int{2, 3} {
			for _, kappa := range [][]float64{nil, {0.45, -0.3, 0.3, -0.5}} {
				t.Run(fmt.Sprintf("variant%d_%dD_constant%v", opts.Variant, d, kappa != nil), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(5, uint64(d)))
					x := relufitStableMixture(t, rng, 2, 2, 5, d, kappa)
					tg := make([]float64, 2*2*5)
					for i := range tg {
						k := 0.0
						if kappa != nil {
							k = kappa[i/5]
						}
						tg[i] = -k + math.Copysign(0.05+rng.Float64(), rng.NormFloat64())
					}
					targets := tensor.New(tensor.WithShape(2, 2, 5), tensor.WithBacking(tg))
					in := []*tensor.Dense{x, targets}
					if kappa != nil {
						in = []*tensor.Dense{x, tensor.New(tensor.WithShape(2, 2), tensor.WithBacking(slices.Clone(kappa))), targets}
					}
					wrt := make([]int, len(in))
					for i := range wrt {
						wrt[i] = i
					}
					checkGraphGrad(t, rng, in, func(n []*G.Node) (*G.Node, error) {
						return G.ApplyOp(NewReLUFitTargets(testDev, opts, kappa != nil), n...)
					}, wrt...)
				})
			}
		}
	}
}

// TestReLUFitTargetsOwnOp checks that the op fed the mixtures' own values
// at their centroids returns NewReLUFit's output, and that the refined fit
// and targets of the wrong shape are rejected when the op is applied.
func TestReLUFitTargetsOwnOp(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(9, uint64(d)))
		x := randomMixture(rng, 2, 3, 11, d)
		l := mixture.Layout{B: 2, C: 3, N: 11, D: d}
		xd, st := x.Data().([]float64), l.Stride()
		own := make([]float64, l.Mixtures()*l.N)
		ps := make([]mixture.Prepared[float64], l.N)
		for m := range l.Mixtures() {
			mx := mixture.Mixture(xd, l, m)
			mixture.PrepareMixture(d, mx, ps)
			for k := range l.N {
				own[m*l.N+k] = mixture.EvalMixture(d, ps, mx[k*st+1:k*st+1+d])
			}
		}
		y0, err0 := NewReLUFit(testDev, ReLUFitOptions{}).Do(x)
		y1, err1 := NewReLUFitTargets(testDev, ReLUFitOptions{}, false).Do(x, tensor.New(tensor.WithShape(2, 3, 11), tensor.WithBacking(own)))
		for _, err := range []error{err0, err1} {
			if err != nil {
				t.Fatal(err)
			}
		}
		gmtest.WantClose(t, fmt.Sprintf("D=%d own targets", d), y1.Data().([]float64), y0.Data().([]float64), 1e-10)
	}
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 7), G.WithName("x"))
	for _, c := range []struct {
		name   string
		opts   ReLUFitOptions
		shape  []int
		substr string
	}{
		{"refined", ReLUFitOptions{Refine: true}, []int{2, 3, 4}, "cannot take given targets"},
		{"shape", ReLUFitOptions{}, []int{2, 3, 5}, `"targets"`},
	} {
		tg := G.NewTensor(g, tensor.Float64, 3, G.WithShape(c.shape...), G.WithName("t"+c.name))
		if _, err := G.ApplyOp(NewReLUFitTargets(testDev, c.opts, false), x, tg); err == nil || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.substr)
		}
	}
}

// TestReLUFitConstantZeroOp checks that the op with constants 0 returns
// NewReLUFit's output and ∂L/∂mixture bit for bit.
func TestReLUFitConstantZeroOp(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(9, uint64(d)))
		x := randomMixture(rng, 2, 3, 11, d)
		zero := tensor.New(tensor.WithShape(2, 3), tensor.Of(tensor.Float64))
		g := randomMixture(rng, 2, 3, 11, d)
		plain, withZero := NewReLUFit(testDev, ReLUFitOptions{}), NewReLUFitConstant(testDev, ReLUFitOptions{})
		y0, err0 := plain.Do(x)
		y1, err1 := withZero.Do(x, zero)
		dx0, err2 := gradOf(plain, 0).Do(x, y0, g)
		dx1, err3 := gradOf(withZero, 0).Do(x, zero, y1, g)
		for _, err := range []error{err0, err1, err2, err3} {
			if err != nil {
				t.Fatal(err)
			}
		}
		// On the CUDA device the fit with a constant runs on the CPU
		// fallback, the plain fit on the GPU kernels.
		dev := testDev.Name
		if ok, e := gmtest.SameAsCPU(dev, y0.Data().([]float64), y1.Data().([]float64)); !ok {
			t.Errorf("D=%d: the fit with κ = 0 differs from the fit without a constant by %g on device %s", d, e, dev)
		}
		if ok, e := gmtest.SameAsCPU(dev, dx0.Data().([]float64), dx1.Data().([]float64)); !ok {
			t.Errorf("D=%d: the gradient with κ = 0 differs from the one without a constant by %g on device %s", d, e, dev)
		}
	}
}

// TestReLUFitOpFloat32 runs the op, without and with constants, in both
// precisions and compares the outputs and, with constants, ∂L/∂constant.
func TestReLUFitOpFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(4, uint64(d)))
		x := randomMixture(rng, 2, 3, 17, d)
		kappa := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(gmtest.Uniform[float64](rng, 6, -0.5, 0.5)))
		g := randomMixture(rng, 2, 3, 17, d)
		for _, c := range []struct {
			op G.Op
			in []*tensor.Dense
		}{
			{NewReLUFit(testDev, ReLUFitOptions{}), []*tensor.Dense{x}},
			{NewReLUFitConstant(testDev, ReLUFitOptions{}), []*tensor.Dense{x, kappa}},
		} {
			in64, in32 := values(c.in), make([]G.Value, len(c.in))
			for i, v := range c.in {
				in32[i] = as32(v)
			}
			y64, err := c.op.Do(in64...)
			if err != nil {
				t.Fatal(err)
			}
			y32, err := c.op.Do(in32...)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("D=%d, %d inputs", d, len(c.in))
			gmtest.WantClose(t, name+" output", y32.Data().([]float32), y64.Data().([]float64), 1e-5)
			if len(c.in) == 1 {
				continue
			}
			dk64, err := gradOf(c.op, 1).Do(append(in64, y64, g)...)
			if err != nil {
				t.Fatal(err)
			}
			dk32, err := gradOf(c.op, 1).Do(append(in32, y32, as32(g))...)
			if err != nil {
				t.Fatal(err)
			}
			gmtest.WantClose(t, name+" ∂L/∂constant", dk32.Data().([]float32), dk64.Data().([]float64), 1e-4)
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
			op := NewReLUFit(testDev, c.opts)
			_, errShape := op.InferShape(c.x.Shape())
			_, errDo := op.Do(c.x)
			if errShape != nil { // value errors only show when the op runs
				gmtest.WantErr(t, errShape, c.want...)
			}
			gmtest.WantErr(t, errDo, c.want...)
		})
	}
}

// TestReLUFitConstantOpErrors checks the op's checks of the input
// "constant": its shape against the mixture's [B, C], its values, and its
// dtype against the mixture's; every error names the op and the input, and
// the shape errors what was expected and found.
func TestReLUFitConstantOpErrors(t *testing.T) {
	x := randomMixture(rand.New(rand.NewPCG(5, 5)), 2, 3, 4, 2)
	kappa := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64))
	}
	edit := func(f func(k []float64)) *tensor.Dense {
		k := kappa(2, 3)
		f(k.Data().([]float64))
		return k
	}
	for _, c := range []struct {
		name     string
		x, kappa *tensor.Dense
		want     []string
	}{
		{"rank 1", x, kappa(6), []string{"gm.ReLUFit", `"constant"`, "rank 2", "(6)"}},
		{"rank 3", x, kappa(2, 3, 1), []string{"gm.ReLUFit", `"constant"`, "rank 2", "(2, 3, 1)"}},
		{"one channel too many", x, kappa(2, 4), []string{"gm.ReLUFit", `"constant"`, "shape (2, 3)", "got (2, 4)"}},
		{"batch and channels swapped", x, kappa(3, 2), []string{"gm.ReLUFit", `"constant"`, "shape (2, 3)", "got (3, 2)"}},
		{"NaN", x, edit(func(k []float64) { k[4] = math.NaN() }), []string{"gm.ReLUFit", `"constant"`, "non-finite", "NaN", "index 4"}},
		{"Inf", x, edit(func(k []float64) { k[0] = math.Inf(-1) }), []string{"gm.ReLUFit", `"constant"`, "non-finite", "-Inf", "index 0"}},
		{"float32 constant", x, as32(kappa(2, 3)), []string{"gm.ReLUFit", `"constant"`, "float32", `"mixture"`, "float64"}},
		{"float32 mixture", as32(x), kappa(2, 3), []string{"gm.ReLUFit", `"constant"`, "float64", `"mixture"`, "float32"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			op := NewReLUFitConstant(testDev, ReLUFitOptions{})
			_, errShape := op.InferShape(c.x.Shape(), c.kappa.Shape())
			_, errDo := op.Do(c.x, c.kappa)
			if errShape != nil { // value and dtype errors only show when the op runs
				gmtest.WantErr(t, errShape, c.want...)
			}
			gmtest.WantErr(t, errDo, c.want...)
			// The grad ops check their inputs the same way.
			y := randomMixture(rand.New(rand.NewPCG(6, 6)), 2, 3, 4, 2)
			for i := range 2 {
				_, err := gradOf(op, i).Do(c.x, c.kappa, y, y)
				gmtest.WantErr(t, err, c.want[1:]...)
			}
		})
	}
	// A graph rejects a wrong shape when the op is applied.
	g := G.NewGraph()
	xn := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 7), G.WithName("x"))
	kn := G.NewMatrix(g, tensor.Float64, G.WithShape(3, 2), G.WithName("kappa"))
	_, err := G.ApplyOp(NewReLUFitConstant(testDev, ReLUFitOptions{}), xn, kn)
	gmtest.WantErr(t, err, "gm.ReLUFit", `"constant"`, "shape (2, 3)", "got (3, 2)")
}

// TestReLUFitGradOpErrors checks the gradient op's own checks.
func TestReLUFitGradOpErrors(t *testing.T) {
	x := randomMixture(rand.New(rand.NewPCG(6, 6)), 1, 2, 3, 3)
	gradOp := gradOf(NewReLUFit(testDev, ReLUFitOptions{}), 0)
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
