package gmnode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConvScaleWeights builds the reference layer step ScaleWeights(Conv(x,
// k), 1/Fi) from hand-made Gaussians and checks one output component and the
// output integrals, which must be Σ_c ∫X_c·∫K_oc / Fi.
func TestConvScaleWeights(t *testing.T) {
	lx := mixture.Layout{B: 1, C: 2, N: 1, D: 2}
	lk := mixture.Layout{B: 1, C: 2, N: 2, D: 2}
	g := func(w, px, py, s float64) mixture.Gaussian {
		return mixture.Gaussian{Weight: w, Position: []float64{px, py}, Covariance: []float64{s, 0.1, 0.1, s}}
	}
	xd, err := mixture.Pack[float64](lx, []mixture.Gaussian{g(2, 1, 0, 1), g(3, 0, 1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	kd, err := mixture.Pack[float64](lk, []mixture.Gaussian{g(0.5, 0, 0, 0.5), g(-1, 1, 1, 0.25), g(4, 2, 0, 1), g(0.25, 0, -1, 0.5)})
	if err != nil {
		t.Fatal(err)
	}
	gr := newGraph()
	x := valueNode(gr, "x", xd, lx.Shape()...)
	k := valueNode(gr, "k", kd, lk.Shape()...)
	y, err := Conv(x, k)
	if err != nil {
		t.Fatal(err)
	}
	y, err = ScaleWeights(y, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Integrate(y)
	if err != nil {
		t.Fatal(err)
	}
	runGraph(t, gr)
	if s := y.Shape(); !s.Eq(tensor.Shape{1, 1, 4, 7}) {
		t.Fatalf("output shape %v, want (1, 1, 4, 7)", s)
	}
	// Component n = i + Ni·(c + Fi·j) = 3 pairs data channel c = 1 with
	// kernel component j = 1 of that channel: g(3,0,1,2) ⊛ g(0.25,0,-1,0.5).
	want := []float64{0.5 * 3 * 0.25, 0, 0, 2.5, 0.2, 0.2, 2.5}
	got := y.Value().Data().([]float64)[3*7 : 4*7]
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("component 3: packed %v, want %v", got, want)
			break
		}
	}
	// ∫ = (2·(0.5 − 1) + 3·(4 + 0.25)) / 2.
	if got, want := in.Value().Data().([]float64)[0], (2*(0.5-1)+3*(4+0.25))/2; math.Abs(got-want) > 1e-14 {
		t.Errorf("output integral %g, want %g", got, want)
	}
}

// TestConvFitIntegral checks that the fused convolution-fitting keeps the
// total integral of the convolution for every n, through a graph.
func TestConvFitIntegral(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 0))
	x, k := covscaleInput(rng, 2, 3, 4), covscaleInput(rng, 2, 3, 3)
	gr := newGraph()
	xn := G.NewTensor(gr, tensor.Float32, 4, G.WithName("x"), G.WithValue(x))
	kn := G.NewTensor(gr, tensor.Float32, 4, G.WithName("k"), G.WithValue(k))
	full := G.Must(Integrate(G.Must(Conv(xn, kn))))
	var fused []*G.Node
	for _, n := range []int{1, 5, 36} {
		y, err := ConvFit(xn, kn, n)
		if err != nil {
			t.Fatal(err)
		}
		fused = append(fused, G.Must(Integrate(y)))
	}
	runGraph(t, gr)
	want := full.Value().Data().([]float32)
	for i, f := range fused {
		for j, v := range f.Value().Data().([]float32) {
			if math.Abs(float64(v-want[j])) > 1e-5*math.Max(1, math.Abs(float64(want[j]))) {
				t.Errorf("case %d integral %d: %g, want Conv's %g", i, j, v, want[j])
			}
		}
	}
}

// TestConvConstant checks ConvConstant against κ_out[b,o] = Σ_c κ[b,c]·Σ_k
// w[o,c,k] computed from the kernel values, for sizes with every dimension
// distinct and for sizes of 1 (one sample, one input or output channel),
// and its shape and dtype errors.
func TestConvConstant(t *testing.T) {
	for _, c := range []struct{ b, fi, fo, nk int }{{3, 2, 4, 5}, {1, 1, 1, 1}, {1, 3, 1, 2}, {2, 1, 3, 2}} {
		rng := rand.New(rand.NewPCG(uint64(c.b), uint64(c.fi)))
		lk := mixture.Layout{B: c.fo, C: c.fi, N: c.nk, D: 2}
		kd := gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), c.fo, c.fi, c.nk, 2)
		kappa := gmtest.Uniform[float64](rng, c.b*c.fi, -1, 1)
		gr := newGraph()
		k := valueNode(gr, "k", kd, lk.Shape()...)
		kn := valueNode(gr, "kappa", kappa, c.b, c.fi)
		y, err := ConvConstant(kn, k)
		if err != nil {
			t.Fatal(err)
		}
		runGraph(t, gr)
		if s := y.Shape(); !s.Eq(tensor.Shape{c.b, c.fo}) {
			t.Fatalf("%+v: shape %v, want (%d, %d)", c, s, c.b, c.fo)
		}
		want := make([]float64, c.b*c.fo)
		for b := range c.b {
			for o := range c.fo {
				for i := range c.fi {
					for j := range c.nk {
						want[b*c.fo+o] += kappa[b*c.fi+i] * kd[lk.Offset(o, i, j)]
					}
				}
			}
		}
		gmtest.WantClose(t, fmt.Sprintf("%+v", c), y.Value().Data().([]float64), want, 1e-14)
	}

	gr := newGraph()
	k := G.NewTensor(gr, tensor.Float64, 4, G.WithName("k"), G.WithShape(4, 3, 2, 7))
	for _, c := range []struct {
		name     string
		kappa, k *G.Node
		want     []string
	}{
		{"channels", G.NewMatrix(gr, tensor.Float64, G.WithShape(2, 4)), k, []string{"gm.ConvConstant", `"constant"`, "Fi = 3", "(2, 4)"}},
		{"rank 1", G.NewVector(gr, tensor.Float64, G.WithShape(3)), k, []string{"gm.ConvConstant", `"constant"`, "[B, Fi]", "(3)"}},
		{"kernel rank", G.NewMatrix(gr, tensor.Float64, G.WithShape(2, 3)), G.NewMatrix(gr, tensor.Float64, G.WithShape(4, 3)), []string{"gm.ConvConstant", `"kernels"`, "rank 4", "(4, 3)"}},
		{"dtype", G.NewMatrix(gr, tensor.Float32, G.WithShape(2, 3)), k, []string{"gm.ConvConstant", `"constant" is float32`, `"kernels" is float64`}},
	} {
		_, err := ConvConstant(c.kappa, c.k)
		gmtest.WantErr(t, err, c.want...)
	}
}

// TestConvConstantGraphGrad checks ∂L/∂κ and ∂L/∂kernels of ConvConstant
// against central differences in a graph, 2D and 3D.
func TestConvConstantGraphGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(15, uint64(d)))
		k := tensor.New(tensor.WithShape(2, 3, 2, 1+d+d*d), tensor.WithBacking(gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), 2, 3, 2, d)))
		kappa := tensor.New(tensor.WithShape(4, 3), tensor.WithBacking(gmtest.Uniform[float64](rng, 12, -1, 1)))
		graphGrad(t, rng, []*tensor.Dense{kappa, k}, func(in []*G.Node) (*G.Node, error) {
			return ConvConstant(in[0], in[1])
		}, 0, 1)
	}
}

// TestConvAtGraphGrad checks ConvAt's values against Conv's mixture
// evaluated point by point, and its gradients for x, the kernels and the
// points against central differences in a graph, 2D and 3D.
func TestConvAtGraphGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(17, uint64(d)))
		x := tensor.New(tensor.WithShape(2, 3, 2, 1+d+d*d), tensor.WithBacking(gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), 2, 3, 2, d)))
		k := tensor.New(tensor.WithShape(2, 3, 2, 1+d+d*d), tensor.WithBacking(gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), 2, 3, 2, d)))
		pts := tensor.New(tensor.WithShape(2, 2, 4, d), tensor.WithBacking(gmtest.Uniform[float64](rng, 2*2*4*d, -1.5, 1.5)))
		got := runNode(t, []*tensor.Dense{x, k, pts}, func(in []*G.Node) (*G.Node, error) { return ConvAt(in[0], in[1], in[2]) })
		gmtest.WantClose(t, fmt.Sprintf("D=%d values", d), got, convAtNaive(x, k, pts), 1e-12)
		graphGrad(t, rng, []*tensor.Dense{x, k, pts}, func(in []*G.Node) (*G.Node, error) {
			return ConvAt(in[0], in[1], in[2])
		}, 0, 1, 2)
	}
}

// convAtNaive evaluates the convolution of the mixtures x [B, Fi, Ni, ·]
// with the kernels [Fo, Fi, Nk, ·] at the points [B, Fo, M, D] term by term:
// Σ_{c,i,j} w_x·w_k N(p; μ_x + μ_k, Σ_x + Σ_k).
func convAtNaive(x, k, pts *tensor.Dense) []float64 {
	xs, ks, ps := x.Shape(), k.Shape(), pts.Shape()
	xd, kd, pd := x.Data().([]float64), k.Data().([]float64), pts.Data().([]float64)
	st, d := xs[3], ps[3]
	var out []float64
	for b := range xs[0] {
		for o := range ks[0] {
			var comps []float64
			for c := range xs[1] {
				for i := range xs[2] {
					gx := xd[((b*xs[1]+c)*xs[2]+i)*st:][:st]
					for j := range ks[2] {
						gk := kd[((o*ks[1]+c)*ks[2]+j)*st:][:st]
						g := make([]float64, st)
						g[0] = gx[0] * gk[0]
						for r := 1; r < st; r++ {
							g[r] = gx[r] + gk[r]
						}
						comps = append(comps, g...)
					}
				}
			}
			prep := make([]mixture.Prepared[float64], len(comps)/st)
			mixture.PrepareMixture(d, comps, prep)
			for m := range ps[2] {
				out = append(out, mixture.EvalMixture(d, prep, pd[((b*ps[1]+o)*ps[2]+m)*d:][:d]))
			}
		}
	}
	return out
}

// runNode builds build over the inputs in a graph on testDev, runs it and
// returns the output's values.
func runNode(t *testing.T, inputs []*tensor.Dense, build func([]*G.Node) (*G.Node, error)) []float64 {
	t.Helper()
	g := G.NewGraph()
	if err := SetDevice(g, testDev); err != nil {
		t.Fatal(err)
	}
	nodes := make([]*G.Node, len(inputs))
	for i, in := range inputs {
		nodes[i] = G.NewTensor(g, tensor.Float64, in.Dims(), G.WithShape(in.Shape()...), G.WithValue(in), G.WithName(fmt.Sprintf("in%d", i)))
	}
	y, err := build(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var v G.Value
	G.Read(y, &v)
	if err := G.NewTapeMachine(g).RunAll(); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(v.Data().([]float64))
}

// TestConvFitTargetsGraphGrad checks the exact-target fused block, ReLU fit
// included, against central differences in a graph, 2D and 3D: ConvFit to
// n = 5 of the 3·4·2 = 24 Gaussians of each output channel, scaled by 1/3,
// its targets from the exact convolution at its centroids, and
// ReLUFitTargets. The signs of the targets, the ReLU's decisions, are
// checked to stay as they are when any input moves by a difference step;
// ConvFit's selection is kept by the seeded inputs, as in the ops' graph
// checks (a changed decision would show as a large error, not hide one).
func TestConvFitTargetsGraphGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(41, uint64(d)))
		x := tensor.New(tensor.WithShape(1, 3, 4, 1+d+d*d), tensor.WithBacking(gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), 1, 3, 4, d)))
		k := tensor.New(tensor.WithShape(2, 3, 2, 1+d+d*d), tensor.WithBacking(gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), 2, 3, 2, d)))
		block := func(in []*G.Node, targets **G.Node) (*G.Node, error) {
			fit, tg, err := ConvFitTargets(in[0], in[1], 5, 1.0/3)
			if err != nil {
				return nil, err
			}
			if targets != nil {
				*targets = tg
			}
			return ReLUFitTargets(fit, tg)
		}
		targets := func() []float64 {
			return runNode(t, []*tensor.Dense{x, k}, func(in []*G.Node) (*G.Node, error) {
				var tg *G.Node
				_, err := block(in, &tg)
				return tg, err
			})
		}
		signs := func() []bool {
			var s []bool
			for _, v := range targets() {
				s = append(s, v > 0)
			}
			return s
		}
		pos := runNode(t, []*tensor.Dense{x, k}, func(in []*G.Node) (*G.Node, error) {
			fit, _, err := ConvFitTargets(in[0], in[1], 5, 1.0/3)
			if err != nil {
				return nil, err
			}
			return Positions(fit)
		})
		want := convAtNaive(x, k, tensor.New(tensor.WithShape(1, 2, 5, d), tensor.WithBacking(pos)))
		for i := range want {
			want[i] /= 3
		}
		gmtest.WantClose(t, fmt.Sprintf("D=%d targets", d), targets(), want, 1e-12)
		s0 := signs()
		for _, in := range []*tensor.Dense{x, k} {
			data := in.Data().([]float64)
			for i := range data {
				for _, h := range []float64{-gmtest.Step, gmtest.Step} {
					data[i] += h
					same := slices.Equal(signs(), s0)
					data[i] -= h
					if !same {
						t.Fatalf("D=%d: the sign of a target flips when an input moves by %g", d, h)
					}
				}
			}
		}
		graphGrad(t, rng, []*tensor.Dense{x, k}, func(in []*G.Node) (*G.Node, error) {
			return block(in, nil)
		}, 0, 1)
	}
}
