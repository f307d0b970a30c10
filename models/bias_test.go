package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func TestParseBiasType(t *testing.T) {
	for _, b := range []BiasType{BiasNone, BiasNormal, BiasNegativeSoftplus} {
		if got, err := ParseBiasType(b.String()); err != nil || got != b {
			t.Errorf("ParseBiasType(%q) = %v, %v; want %v", b.String(), got, err, b)
		}
	}
	if got, err := ParseBiasType(""); err != nil || got != BiasNone {
		t.Errorf(`ParseBiasType("") = %v, %v; want none`, got, err)
	}
	_, err := ParseBiasType("softplus")
	gmtest.WantErr(t, err, `unknown bias type "softplus"`, "none, normal or negative-softplus")
	if s := BiasType(7).String(); s != "BiasType(7)" {
		t.Errorf("BiasType(7).String() = %q", s)
	}
}

// biasModel builds a small float64 model with bias type b.
func biasModel(t *testing.T, b BiasType) *Model {
	t.Helper()
	l, err := ParseLayout("1/8 -> 4/4 -> 3")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(Config{Layout: l, D: 2, Classes: 3, Batch: 2, Bias: b, Dtype: tensor.Float64, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBuildBias checks the biases each bias type adds: none without any
// (the parameters and table of a model without the option), one [1, F_o]
// per block otherwise, at their initial values, last among the learnables,
// counted in the total but not in the paper's count, and named in the
// table; and that the states of models with and without biases do not
// load into each other.
func TestBuildBias(t *testing.T) {
	none := biasModel(t, BiasNone)
	if len(none.Biases) != 0 || strings.Contains(none.Table(), "bias") || strings.Contains(none.Table(), "constant") {
		t.Errorf("BiasNone: %d biases, table\n%s", len(none.Biases), none.Table())
	}
	paper0, total0 := none.ParamCount()
	for _, c := range []struct {
		b    BiasType
		init float64
	}{{BiasNormal, 0}, {BiasNegativeSoftplus, -0.1}} {
		m := biasModel(t, c.b)
		if len(m.Biases) != 2 {
			t.Fatalf("%v: %d biases, want one per block", c.b, len(m.Biases))
		}
		for i, want := range []int{4, 3} {
			v := m.Biases[i].Value().Data().([]float64)
			if !m.Biases[i].Shape().Eq(tensor.Shape{1, want}) || slices.ContainsFunc(v, func(x float64) bool { return x != c.init }) {
				t.Errorf("%v: bias %d has shape %v and values %v, want (1, %d) of %g", c.b, i+1, m.Biases[i].Shape(), v, want, c.init)
			}
		}
		if ls := m.Learnables(); len(ls) != len(none.Learnables())+2 || !slices.Equal(ls[len(ls)-2:], m.Biases) {
			t.Errorf("%v: the biases are not the last learnables", c.b)
		}
		if paper, total := m.ParamCount(); paper != paper0 || total != total0+7 {
			t.Errorf("%v: parameter counts %d, %d; want %d, %d", c.b, paper, total, paper0, total0+7)
		}
		for _, want := range []string{"bias " + c.b.String(), "conv1 constant (÷ Fi, bias)", "(2, 4)", "conv2 constant"} {
			if !strings.Contains(m.Table(), want) {
				t.Errorf("%v: layer table lacks %q:\n%s", c.b, want, m.Table())
			}
		}
		gmtest.WantErr(t, m.SetState(none.State()), "model state has", "parameters, the model has")
		gmtest.WantErr(t, none.SetState(m.State()), "model state has", "parameters, the model has")
		s := m.State()
		s.Params[len(s.Params)-1][2] = 0.25
		if err := m.SetState(s); err != nil {
			t.Fatal(err)
		}
		if got := m.Biases[1].Value().Data().([]float64)[2]; got != 0.25 {
			t.Errorf("%v: SetState set the last bias to %g, want 0.25", c.b, got)
		}
	}
	l, _ := ParseLayout("1/8 -> 4/4 -> 3")
	_, err := Build(Config{Layout: l, D: 2, Classes: 3, Batch: 2, Bias: 3})
	gmtest.WantErr(t, err, "unknown bias type BiasType(3)")
}

// TestBiasBlockGraphGrad checks one block with biased constants, from the
// input mixtures and constants to the fitted mixtures and their new
// constants (Conv → ÷ F_i, ConvConstant → ÷ F_i → bias, ReLUFitConstant),
// against central differences in a graph, with respect to every input: the
// data, the carried constants, the kernels and the bias, for both bias
// types, 2D and 3D.
func TestBiasBlockGraphGrad(t *testing.T) {
	for _, b := range []BiasType{BiasNormal, BiasNegativeSoftplus} {
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("%v/%dD", b, d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(b), uint64(d)))
				s := gmtest.Spec{WeightMin: 0.2, WeightMax: 1, NegativeOneIn: 2, Spread: 1.5, CovScale: 0.3, CovDiag: 0.2}
				p := 1 + d + d*d
				x := tensor.New(tensor.WithShape(2, 2, 3, p), tensor.WithBacking(gmtest.Mixtures[float64](rng, s, 2, 2, 3, d)))
				kappa := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0.3, 0.8, 0.5, 0.2}))
				k := tensor.New(tensor.WithShape(3, 2, 2, p), tensor.WithBacking(gmtest.Mixtures[float64](rng, s, 3, 2, 2, d)))
				bias := tensor.New(tensor.WithShape(1, 3), tensor.WithBacking([]float64{0.3, -0.4, 0.15}))
				gmtest.GraphGrad(t, rng, []*tensor.Dense{x, kappa, k, bias}, func(in []*G.Node) (*G.Node, error) {
					y, err := gmnode.Conv(in[0], in[2])
					if err == nil {
						y, err = gmnode.ScaleWeights(y, 0.5)
					}
					var c, cOut *G.Node
					if err == nil {
						c, err = blockConstant(in[1], in[2], in[3], 2, b)
					}
					if err == nil {
						y, cOut, err = gmnode.ReLUFitConstant(y, c)
					}
					if err != nil {
						return nil, err
					}
					flat := func(n *G.Node) *G.Node { return G.Must(G.Reshape(n, tensor.Shape{n.Shape().TotalSize()})) }
					return G.Concat(0, flat(y), flat(cOut))
				}, 0, 1, 2, 3)
			})
		}
	}
}

// TestBiasBlockConstant checks blockConstant's values against the formulas:
// κ·∫Kᵀ/F_i + bias and κ·∫Kᵀ/F_i − ln(1 + e^(20·bias))/20.
func TestBiasBlockConstant(t *testing.T) {
	g := G.NewGraph()
	// Kernels [F_o = 2, F_i = 1, N_k = 1] with integrals 2 and −1.
	k := G.NewTensor(g, tensor.Float64, 4, G.WithName("k"), G.WithValue(tensor.New(tensor.WithShape(2, 1, 1, 7),
		tensor.WithBacking([]float64{2, 0, 0, 1, 0, 0, 1, -1, 0, 0, 1, 0, 0, 1}))))
	kappa := G.NewMatrix(g, tensor.Float64, G.WithName("kappa"), G.WithValue(tensor.New(tensor.WithShape(1, 1), tensor.WithBacking([]float64{0.5}))))
	bias := G.NewMatrix(g, tensor.Float64, G.WithName("bias"), G.WithValue(tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float64{0.25, -0.1}))))
	normal, err := blockConstant(kappa, k, bias, 1, BiasNormal)
	if err != nil {
		t.Fatal(err)
	}
	soft, err := blockConstant(kappa, k, bias, 1, BiasNegativeSoftplus)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	sp := func(b float64) float64 { return math.Log1p(math.Exp(20*b)) / 20 }
	gmtest.WantClose(t, "normal", normal.Value().Data().([]float64), []float64{1 + 0.25, -0.5 - 0.1}, 1e-15)
	gmtest.WantClose(t, "negative softplus", soft.Value().Data().([]float64), []float64{1 - sp(0.25), -0.5 - sp(-0.1)}, 1e-15)
	if _, err := blockConstant(kappa, k, bias, 1, BiasNone); err == nil {
		t.Error("BiasNone: blockConstant made a constant")
	}
}

// TestBiasTrainingStep runs a training step's forward and backward pass of
// a float32 model with each bias type, unfused and fused ×2 with exact
// targets (where the fit to the targets takes the constants), and requires
// finite gradients of every bias, not all zero: the constants reach the loss.
func TestBiasTrainingStep(t *testing.T) {
	for _, c := range []struct {
		b     BiasType
		fused int
	}{{BiasNormal, 0}, {BiasNegativeSoftplus, 0}, {BiasNormal, 2}, {BiasNegativeSoftplus, 2}} {
		b := c.b
		l, _ := ParseLayout("1/8 -> 4/4 -> 3")
		m, err := Build(Config{Layout: l, D: 2, Classes: 3, Batch: 4, Bias: b, Seed: 5, Fused: c.fused, FusedExact: c.fused > 0})
		if err != nil {
			t.Fatal(err)
		}
		grads, err := G.Grad(m.Loss, m.Biases...)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		x := gmtest.Mixtures[float32](rng, gmtest.StandardSpec(), 4, 1, 8, 2)
		letBiasBatch(t, m, x)
		vm := G.NewTapeMachine(m.Graph)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		vm.Close()
		for i, g := range grads {
			v := g.Value().Data().([]float32)
			if slices.ContainsFunc(v, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) }) || !slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
				t.Errorf("%v, fused ×%d: gradient of bias %d is %v", b, c.fused, i+1, v)
			}
		}
	}
}

// TestBiasModelGradient checks the whole model's gradient of the loss with
// respect to the biases against central differences, in training mode with
// the state restored before every evaluation (CovScaleNorm updates its
// average in every training forward). The reduction keeps the largest
// weights, whose gradient is exact for a fixed selection: MEM's likelihoods
// carry no gradient, and TreeHEM is meant for positive weights, which a
// positive constant does not give (see BiasNormal). The biases are set to
// both signs away from 0.
func TestBiasModelGradient(t *testing.T) {
	for _, b := range []BiasType{BiasNormal, BiasNegativeSoftplus} {
		l, _ := ParseLayout("1/8 -> 4/4 -> 3")
		m, err := Build(Config{Layout: l, D: 2, Classes: 3, Batch: 4, Bias: b, Reduction: gmnode.UseKeepLargest(), Dtype: tensor.Float64, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		s0 := m.State()
		for _, p := range s0.Params[len(s0.Params)-2:] {
			for i := range p {
				p[i] = 0.3*float64(i) - 0.2
			}
		}
		if err := m.SetState(s0); err != nil {
			t.Fatal(err)
		}
		grads, err := G.Grad(m.Loss, m.Biases...)
		if err != nil {
			t.Fatal(err)
		}
		x := gmtest.Mixtures[float64](rand.New(rand.NewPCG(1, 0)), gmtest.StandardSpec(), 4, 1, 8, 2)
		letBiasBatch(t, m, x)
		vm := G.NewTapeMachine(m.Graph)
		defer vm.Close()
		run := func() float64 {
			vm.Reset()
			if err := vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			return m.Loss.Value().Data().(float64)
		}
		run()
		analytic := make([][]float64, len(grads))
		for i, g := range grads {
			analytic[i] = slices.Clone(g.Value().Data().([]float64))
		}
		for i, bias := range m.Biases {
			v := bias.Value().Data().([]float64)
			loss := func() float64 {
				keep := slices.Clone(v)
				if err := m.SetState(s0); err != nil {
					t.Fatal(err)
				}
				copy(v, keep)
				return run()
			}
			gmtest.WantGrad(t, fmt.Sprintf("%v: bias %d", b, i+1), analytic[i], v, loss)
		}
	}
}

// letBiasBatch binds the 2D batch x [4, 1, 8, 7] and one-hot targets of
// the classes 0, 1, 2, 0 to m's input and target.
func letBiasBatch[T float32 | float64](t *testing.T, m *Model, x []T) {
	t.Helper()
	target := make([]T, 12)
	for i := range 4 {
		target[3*i+i%3] = 1
	}
	if err := G.Let(m.Input, tensor.New(tensor.WithShape(4, 1, 8, 7), tensor.WithBacking(x))); err != nil {
		t.Fatal(err)
	}
	if err := G.Let(m.Target, tensor.New(tensor.WithShape(4, 3), tensor.WithBacking(target))); err != nil {
		t.Fatal(err)
	}
}
