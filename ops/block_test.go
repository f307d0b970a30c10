package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// blockCases are the blocks of the block tests: every convolution, every
// reduction, TreeHEM's factors and its under-filling, integrating or not.
var blockCases = []struct {
	name string
	spec BlockSpec
}{
	{"conv+TreeHEM", BlockSpec{Reduce: BlockTreeHEM, Np: 4, TreeHEM: TreeHEMOptions{Reduction: 2}}},
	{"conv+TreeHEM T4 under", BlockSpec{Reduce: BlockTreeHEM, Np: 5, TreeHEM: TreeHEMOptions{Reduction: 4, UnderFill: true}}},
	{"convfit+TreeHEM", BlockSpec{Fit: fitN(7), Reduce: BlockTreeHEM, Np: 4, TreeHEM: TreeHEMOptions{Reduction: 2}}},
	{"conv+KeepLargest", BlockSpec{Reduce: BlockKeepLargest, Np: 3}},
	{"conv+MEM", BlockSpec{Reduce: BlockMEM, Np: 6}},
	{"convfit to every leaf+MEM integrate", BlockSpec{Fit: fitN(24), Reduce: BlockMEM, Np: 6, Integrate: true}},
	{"convfit unreduced", BlockSpec{Fit: fitN(5), ReLU: ReLUFitOptions{Variant: device.ReLUFitPaper}}},
	{"conv+TreeHEM integrate", BlockSpec{Reduce: BlockTreeHEM, Np: 4, TreeHEM: TreeHEMOptions{Reduction: 2}, Integrate: true}},
	{"conv unreduced integrate", BlockSpec{Integrate: true}},
	{"convfit near=0+TreeHEM", BlockSpec{Fit: fitN(7), NearTargets: true, Reduce: BlockTreeHEM, Np: 4, TreeHEM: TreeHEMOptions{Reduction: 2}}},
	{"convfit near=2 integrate", BlockSpec{Fit: fitN(5), NearTargets: true, Near: 2, Integrate: true}},
	{"convfit near=∞+KeepLargest", BlockSpec{Fit: fitN(7), NearTargets: true, Near: math.Inf(1), Reduce: BlockKeepLargest, Np: 3}},
}

// blockInputs returns data [2, 2, 6] on a jittered grid with positive
// weights and kernels [2, 2, 2] of positive weights near the origin: the
// convolution's components are well separated, so that no decision of the
// fused convolution-fitting, keep-largest or TreeHEM changes under a
// finite difference's step.
func blockInputs(rng *rand.Rand, d int) []*tensor.Dense {
	x := treehemSeparated(rng, 2, 2, 6, d)
	k := randomMixture(rng, 2, 2, 2, d)
	v, s := k.Data().([]float64), 1+d+d*d
	for i := 0; i < len(v); i += s {
		v[i] = 0.5 + rng.Float64()
		for j := range d {
			v[i+1+j] *= 0.05
		}
	}
	return []*tensor.Dense{x, k}
}

// memBlockInputs returns inputs whose convolution MEM reduces with locally
// constant responsibilities, as memClustered's do: data [2, 2, 6] whose
// component n lies near the grid point 15·(n mod 3, ⌊n/3⌋, n mod 2) in both
// channels, heavy in channel 0 (w ∈ [2, 3)) and light in channel 1 (w ∈
// [0.1, 0.4)), and kernels [2, 2, 2] near the origin, a heavy (w ∈
// [0.9, 1.1)) and a light (w ∈ [0.1, 0.3)) Gaussian, all of covariance
// 0.05·(A·Aᵀ + 0.3·I). Each of the convolution's six clusters then has one
// component heavier than any other cluster's second: with Np = 6 MEM starts
// from one leader per cluster, every target's responsibility is 1 for its
// own leader and e^(−hundreds) for the others, and finite differences see
// nothing of the detached likelihoods. A fused block keeps that only if it
// fits every convolved Gaussian (Fit.N = 24): a coarser fit merges
// Gaussians of different clusters, whose moment matches overlap.
func memBlockInputs(rng *rand.Rand, d int) []*tensor.Dense {
	x, k := randomMixture(rng, 2, 2, 6, d), randomMixture(rng, 2, 2, 2, d)
	s := 1 + d + d*d
	shape := func(v []float64, weight func(i int) float64, centre func(i, axis int) float64) {
		for i := 0; i < len(v); i += s {
			v[i] = weight(i / s)
			for j := range d {
				v[i+1+j] = 0.05*v[i+1+j] + centre(i/s, j)
			}
			for j := range v[i+1+d : i+s] {
				v[i+1+d+j] *= 0.05
			}
		}
	}
	shape(x.Data().([]float64), func(i int) float64 {
		if i/6%2 == 0 {
			return 2 + rng.Float64()
		}
		return 0.1 + 0.3*rng.Float64()
	}, func(i, axis int) float64 { return 15 * float64([3]int{i % 6 % 3, i % 6 / 3, i % 2}[axis]) })
	shape(k.Data().([]float64), func(i int) float64 {
		if i%2 == 0 {
			return 0.9 + 0.2*rng.Float64()
		}
		return 0.1 + 0.2*rng.Float64()
	}, func(int, int) float64 { return 0 })
	return []*tensor.Dense{x, k}
}

// composedBlock applies the ops the block op stands for, one after another;
// for near-group targets of radius ∞, the ReLU fit of the fused
// convolution-fitting to the exact convolution at its centroids.
func composedBlock(s BlockSpec, x, k *G.Node) (*G.Node, error) {
	var y *G.Node
	var err error
	if s.Fused() {
		y, err = G.ApplyOp(NewConvFit(testDev, s.Fit), x, k)
	} else {
		y, err = G.ApplyOp(NewConv(testDev), x, k)
	}
	if err != nil {
		return nil, err
	}
	scale := NewScaleWeights(testDev, 1/float64(x.Shape()[1]))
	if y, err = G.ApplyOp(scale, y); err != nil {
		return nil, err
	}
	if math.IsInf(s.Near, 1) {
		d := 2
		if x.Shape()[3] == 13 {
			d = 3
		}
		pts := G.Must(G.Slice(y, nil, nil, nil, G.S(1, 1+d)))
		conv := G.Must(G.ApplyOp(scale, G.Must(G.ApplyOp(NewConv(testDev), x, k))))
		t := G.Must(G.ApplyOp(NewEvaluate(testDev), conv, pts))
		y, err = G.ApplyOp(NewReLUFitTargets(testDev, s.ReLU, false), y, t)
	} else {
		y, err = G.ApplyOp(NewReLUFit(testDev, s.ReLU), y)
	}
	if err != nil {
		return nil, err
	}
	switch s.Reduce {
	case BlockTreeHEM:
		y, err = G.ApplyOp(NewTreeHEM(testDev, s.Np, s.TreeHEM), y)
	case BlockKeepLargest:
		y, err = G.ApplyOp(NewKeepLargest(testDev, s.Np), y)
	case BlockMEM:
		y, err = G.ApplyOp(NewMEM(testDev, s.Np), y)
	}
	if err != nil || !s.Integrate {
		return y, err
	}
	return G.ApplyOp(NewIntegrate(testDev), y)
}

// TestBlockEqualsComposed checks that the block op's output and both
// gradients equal those of the ops it stands for, bitwise on the CPU and
// within gmtest.DeviceTolerance on another device, in float64 (the
// gradient checks) and float32 (training), 2D and 3D. Blocks with
// near-group targets, which no composition of ops computes, are checked at
// radius ∞, where they are the ReLU fit of the fused convolution-fitting to
// the exact convolution at its centroids (the same function summed in
// another order: to 1e-10 in float64, 1e-4 in float32).
func TestBlockEqualsComposed(t *testing.T) {
	for _, c := range blockCases {
		exactTargets := c.spec.NearTargets && math.IsInf(c.spec.Near, 1)
		if c.spec.NearTargets && !exactTargets {
			continue
		}
		for _, d := range []int{2, 3} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/%dD/%v", c.name, d, dt), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(5, uint64(d)))
					in := blockInputs(rng, d)
					r := gmtest.Normal(rng, 2*2*max(c.spec.Np, 12*2)*(1+d+d*d))
					block := runBlockGraph(t, in, dt, r, func(x, k *G.Node) (*G.Node, error) {
						return G.ApplyOp(NewBlock(testDev, c.spec), x, k)
					})
					composed := runBlockGraph(t, in, dt, r, func(x, k *G.Node) (*G.Node, error) {
						return composedBlock(c.spec, x, k)
					})
					for i, what := range []string{"output", "∂L/∂data", "∂L/∂kernels"} {
						switch {
						case exactTargets && dt == tensor.Float32:
							gmtest.WantClose(t, what, block[i], composed[i], 1e-4)
						case exactTargets:
							gmtest.WantClose(t, what, block[i], composed[i], 1e-10)
						default:
							if same, e := gmtest.SameAsCPU(testDev.Name, block[i], composed[i]); !same {
								t.Errorf("%s: block and composed ops differ by %g", what, e)
							}
						}
					}
				})
			}
		}
	}
}

// runBlockGraph builds f over the inputs in (as dt), runs it with the
// gradient of L = Σ y·r and returns y, ∂L/∂data and ∂L/∂kernels as float64.
func runBlockGraph(t *testing.T, in []*tensor.Dense, dt tensor.Dtype, r []float64, f func(x, k *G.Node) (*G.Node, error)) [3][]float64 {
	t.Helper()
	g := G.NewGraph()
	nodes := make([]*G.Node, 2)
	for i, v := range in {
		if dt == tensor.Float32 {
			v = as32(v)
		}
		nodes[i] = G.NewTensor(g, dt, 4, G.WithShape(v.Shape()...), G.WithValue(v), G.WithName(fmt.Sprint("in", i)))
	}
	y, err := f(nodes[0], nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	rv := r[:y.Shape().TotalSize()]
	var rt *tensor.Dense
	if dt == tensor.Float32 {
		rt = tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(gmtest.To32(rv)))
	} else {
		rt = tensor.New(tensor.WithShape(y.Shape()...), tensor.WithBacking(append([]float64(nil), rv...)))
	}
	rn := G.NewTensor(g, dt, y.Shape().Dims(), G.WithShape(y.Shape()...), G.WithValue(rt), G.WithName("r"))
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(y, rn))))
	if _, err := G.Grad(cost, nodes...); err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	var out [3][]float64
	out[0] = float64s(y.Value())
	for i, n := range nodes {
		gv, err := n.Grad()
		if err != nil {
			t.Fatal(err)
		}
		out[1+i] = float64s(gv)
	}
	return out
}

// TestBlockGraphGrad checks the block op's gradients with respect to the
// data and the kernels through a graph, 2D and 3D, for every block of
// blockCases; those reducing with MEM, whose likelihoods carry no gradient,
// on memBlockInputs.
func TestBlockGraphGrad(t *testing.T) {
	for _, c := range blockCases {
		inputs := blockInputs
		if c.spec.Reduce == BlockMEM {
			inputs = memBlockInputs
		}
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%dD", c.name, d), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(9, uint64(d)))
				checkGraphGrad(t, rng, inputs(rng, d), func(in []*G.Node) (*G.Node, error) {
					return G.ApplyOp(NewBlock(testDev, c.spec), in[0], in[1])
				}, 0, 1)
			})
		}
	}
}

// TestBlockOpErrors checks that a block the op cannot compute is reported
// when it is applied, naming the op and the part.
func TestBlockOpErrors(t *testing.T) {
	for _, c := range []struct {
		spec BlockSpec
		want string
	}{
		{BlockSpec{Reduce: BlockTreeHEM, Np: 4, TreeHEM: TreeHEMOptions{Reduction: 3}}, "TreeHEM"},
		{BlockSpec{Reduce: BlockTreeHEM, Np: 1, TreeHEM: TreeHEMOptions{Reduction: 2}}, "TreeHEM"},
		{BlockSpec{Reduce: BlockKeepLargest, Np: 100}, "keep-largest"},
		{BlockSpec{Reduce: BlockMEM, Np: 0}, "MEM: np = 0"},
		{BlockSpec{Fit: ConvFitSelect{N: 4, Negative: -1}}, "fused convolution-fitting"},
		{BlockSpec{Reduce: 9, Np: 2}, "unknown reduction"},
		{BlockSpec{NearTargets: true}, "near-group targets need the fused"},
		{BlockSpec{Fit: fitN(4), Near: 1}, "radius 1 without near-group targets"},
		{BlockSpec{Fit: fitN(4), NearTargets: true, Near: -1}, "near-group targets: radius -1"},
		{BlockSpec{Fit: fitN(4), NearTargets: true, Near: math.NaN()}, "near-group targets: radius NaN"},
		{BlockSpec{Fit: fitN(4), NearTargets: true, ReLU: ReLUFitOptions{Refine: true}}, "near-group targets"},
	} {
		g := G.NewGraph()
		rng := rand.New(rand.NewPCG(1, 2))
		in := blockInputs(rng, 2)
		x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(in[0].Shape()...), G.WithValue(in[0]))
		k := G.NewTensor(g, tensor.Float64, 4, G.WithShape(in[1].Shape()...), G.WithValue(in[1]))
		_, err := G.ApplyOp(NewBlock(testDev, c.spec), x, k)
		if err == nil || !strings.Contains(err.Error(), "gm.Block") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming gm.Block and %q", c.spec, err, c.want)
		}
	}
}
