package gmnode

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
)

// reduceInput returns a float64 batch with weights in [−0.7, 1.3), positions
// in [−3, 3) and covariances A·Aᵀ + 0.3·I.
func reduceInput(rng *rand.Rand, l mixture.Layout) []float64 {
	s := gmtest.Spec{WeightMin: -0.7, WeightMax: 1.3, Spread: 3, CovScale: 1, CovDiag: 0.3}
	return gmtest.Mixtures[float64](rng, s, l.B, l.C, l.N, l.D)
}

// TestReLUFitReduce builds ReLUFitReduce for every method, runs the graph
// with its gradient, and compares the output, the kept dense node and the
// gradient of L = Σ y·r with the ops/cpu kernels composed by hand.
func TestReLUFitReduce(t *testing.T) {
	cases := []struct {
		name   string
		method Reduction
		np     int
		// reduce and back are the kernel compositions the graph must match.
		reduce func(y, x []float64, l mixture.Layout) error
		back   func(dx, x, g []float64, l mixture.Layout) error
	}{
		{"MEM", UseMEM(), 4,
			func(y, x []float64, l mixture.Layout) error { cpu.MEM(y, x, l, 4); return nil },
			func(dx, x, g []float64, l mixture.Layout) error { cpu.MEMBackward(dx, x, g, l, 4); return nil }},
		{"TreeHEM T=2", UseTreeHEM(2), 4,
			func(y, x []float64, l mixture.Layout) error {
				return cpu.TreeHEM(y, x, l, 4, device.TreeHEMOptions{Reduction: 2})
			},
			func(dx, x, g []float64, l mixture.Layout) error {
				return cpu.TreeHEMBackward(dx, x, g, l, 4, device.TreeHEMOptions{Reduction: 2})
			}},
		{"TreeHEM T=4, np < T", UseTreeHEM(4), 2,
			func(y, x []float64, l mixture.Layout) error {
				lt := l
				lt.N = 4
				mid := make([]float64, lt.Len())
				if err := cpu.TreeHEM(mid, x, l, 4, device.TreeHEMOptions{Reduction: 4}); err != nil {
					return err
				}
				cpu.MEM(y, mid, lt, 2)
				return nil
			},
			func(dx, x, g []float64, l mixture.Layout) error {
				lt := l
				lt.N = 4
				mid, dmid := make([]float64, lt.Len()), make([]float64, lt.Len())
				if err := cpu.TreeHEM(mid, x, l, 4, device.TreeHEMOptions{Reduction: 4}); err != nil {
					return err
				}
				cpu.MEMBackward(dmid, mid, g, lt, 2)
				return cpu.TreeHEMBackward(dx, x, dmid, l, 4, device.TreeHEMOptions{Reduction: 4})
			}},
		{"no reduction", Reduction{}, -1,
			func(y, x []float64, l mixture.Layout) error { copy(y, x); return nil },
			func(dx, x, g []float64, l mixture.Layout) error { copy(dx, g); return nil }},
	}
	for _, d := range []int{2, 3} {
		for ci, c := range cases {
			t.Run(fmt.Sprintf("%dD/%s", d, c.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(d), uint64(ci)))
				l := mixture.Layout{B: 2, C: 2, N: 12, D: d}
				xd := reduceInput(rng, l)
				lo := l
				if c.np >= 0 {
					lo.N = c.np
				}
				rd := gmtest.Normal(rng, lo.Len())
				g := newGraph()
				x := valueNode(g, "x", append([]float64(nil), xd...), l.Shape()...)
				var dense *G.Node
				y, err := ReLUFitReduce(x, c.np, c.method, KeepDense(&dense))
				if err != nil {
					t.Fatal(err)
				}
				r := valueNode(g, "r", rd, lo.Shape()...)
				cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, r))))
				grads, err := G.Grad(cost, x)
				if err != nil {
					t.Fatal(err)
				}
				runGraph(t, g)
				wantDense := make([]float64, l.Len())
				if err := cpu.ReLUFit(wantDense, xd, nil, nil, l, device.ReLUFitOptions{}); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, lo.Len())
				if err := c.reduce(want, wantDense, l); err != nil {
					t.Fatal(err)
				}
				dev := testDev.Name
				if ok, e := gmtest.SameAsCPU(dev, dense.Value().Data().([]float64), wantDense); !ok {
					t.Errorf("%dD: kept dense node differs from cpu.ReLUFit by %g on device %s", d, e, dev)
				}
				if ok, e := gmtest.SameAsCPU(dev, y.Value().Data().([]float64), want); !ok {
					t.Errorf("%dD: output differs from the kernels by %g on device %s", d, e, dev)
				}
				dDense, wantGrad := make([]float64, l.Len()), make([]float64, l.Len())
				if err := c.back(dDense, wantDense, rd, l); err != nil {
					t.Fatal(err)
				}
				if err := cpu.ReLUFitBackward(wantGrad, nil, nil, xd, nil, nil, dDense, l, device.ReLUFitOptions{}); err != nil {
					t.Fatal(err)
				}
				if e := gmtest.MaxAbsDiff(grads[0].Value().Data().([]float64), wantGrad); e > 1e-12*(1+gmtest.MaxAbs(wantGrad)) {
					t.Errorf("%dD: gradient differs from the composed kernels by %g", d, e)
				}
			})
		}
	}
}

// TestReLUFitReduceWithConstant checks that WithConstant fits with the
// constants (the kept dense node is cpu.ReLUFit's with them: bitwise on the
// CPU, within gmtest.DeviceTolerance on another device), stores the new
// constants max(κ, 0), and may discard them.
func TestReLUFitReduceWithConstant(t *testing.T) {
	l := mixture.Layout{B: 2, C: 2, N: 12, D: 2}
	xd := reduceInput(rand.New(rand.NewPCG(2, 2)), l)
	kd := []float64{0.4, -0.3, 0, 1.2}
	g := newGraph()
	x := valueNode(g, "x", xd, l.Shape()...)
	kappa := valueNode(g, "kappa", kd, 2, 2)
	var dense, kappaOut *G.Node
	if _, err := ReLUFitReduce(x, 4, UseMEM(), WithConstant(kappa, &kappaOut), KeepDense(&dense)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReLUFitReduce(x, 4, UseMEM(), WithConstant(kappa, nil)); err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	want := make([]float64, l.Len())
	if err := cpu.ReLUFit(want, xd, kd, nil, l, device.ReLUFitOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, e := gmtest.SameAsCPU(testDev.Name, dense.Value().Data().([]float64), want); !ok {
		t.Errorf("the dense fit differs from cpu.ReLUFit with the constants by %g", e)
	}
	if got := kappaOut.Value().Data().([]float64); !slices.Equal(got, []float64{0.4, 0, 0, 1.2}) {
		t.Errorf("new constants %v, want max(κ, 0) = [0.4 0 0 1.2]", got)
	}
}

// TestReLUFitReduceBadInput checks the errors of the combined call.
func TestReLUFitReduceBadInput(t *testing.T) {
	cases := []struct {
		name   string
		np     int
		method Reduction
		want   []string
	}{
		{"np = 0", 0, UseMEM(), []string{"gm.ReLUFitReduce", "np = 0"}},
		{"no method", 3, Reduction{}, []string{"gm.ReLUFitReduce", "needs a reduction method"}},
		{"TreeHEM T = 3", 4, UseTreeHEM(3), []string{"gm.ReLUFitReduce", "TreeHEM(T=3)", "T = 3"}},
		{"np above N for MEM is fine", 20, UseMEM(), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGraph()
			l := mixture.Layout{B: 1, C: 1, N: 6, D: 2}
			x := valueNode(g, "x", reduceInput(rand.New(rand.NewPCG(1, 2)), l), l.Shape()...)
			_, err := ReLUFitReduce(x, c.np, c.method)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
