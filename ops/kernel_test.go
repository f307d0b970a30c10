package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// kernelRawTensors returns raw kernel tensors [fo,fi,nk], [fo,fi,nk,d] and
// [fo,fi,nk,d,d]; the factors are a·(I + 0.3·U(−1,1)).
func kernelRawTensors(rng *rand.Rand, fo, fi, nk, d int, a float64) (w, p, f *tensor.Dense) {
	n := fo * fi * nk
	wd, pd, fd := make([]float64, n), make([]float64, n*d), make([]float64, n*d*d)
	for i := range wd {
		wd[i] = rng.NormFloat64()
	}
	for i := range pd {
		pd[i] = 2*rng.Float64() - 1
	}
	for i := range fd {
		fd[i] = 0.3 * (2*rng.Float64() - 1)
		if (i%(d*d))%(d+1) == 0 {
			fd[i]++
		}
		fd[i] *= a
	}
	return tensor.New(tensor.WithShape(fo, fi, nk), tensor.WithBacking(wd)),
		tensor.New(tensor.WithShape(fo, fi, nk, d), tensor.WithBacking(pd)),
		tensor.New(tensor.WithShape(fo, fi, nk, d, d), tensor.WithBacking(fd))
}

// assembleOp returns the kernel assembly with the reference's constants for
// radius r.
func assembleOp(r float64) G.Op { return NewAssembleKernel(testDev, device.DefaultKernelConfig(r)) }

// assembleOpWith returns the kernel assembly of radius 1 with the constants
// set changes.
func assembleOpWith(set func(*KernelConfig)) G.Op {
	cfg := device.DefaultKernelConfig(1)
	set(&cfg)
	return NewAssembleKernel(testDev, cfg)
}

// TestAssembleKernelGrad checks the graph gradients of all three raw tensors,
// with ε in float64 and in float32. ε is detached; the factors are scaled so
// that max|A·Aᵀ| < 1 and ε sits on its floor, where no finite-difference step
// can move it. The kernel level test in package cpu covers ε driven by A,
// with ε held fixed.
func TestAssembleKernelGrad(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, f32 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%dD_float32eps%v", d, f32), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(41, uint64(d)))
				w, p, a := kernelRawTensors(rng, 2, 3, 4, d, 0.6)
				cfg := device.DefaultKernelConfig(2.5)
				cfg.Float32Epsilon = f32
				if eps := cpu.KernelEpsilon(a.Data().([]float64), d, cfg); eps != cfg.Epsilon(0) {
					t.Fatalf("ε = %g is not on its floor %g", eps, cfg.Epsilon(0))
				}
				checkGraphGrad(t, rng, []*tensor.Dense{w, p, a}, func(in []*G.Node) (*G.Node, error) {
					return G.ApplyOp(NewAssembleKernel(testDev, cfg), in[0], in[1], in[2])
				}, 0, 1, 2)
			})
		}
	}
}

// TestAssembleKernelFloat32Epsilon checks that the op applies
// Float32Epsilon: in float64, on the floor ε = fl32(0.05) instead of 0.05,
// which moves every diagonal covariance entry by (r/3)²·(fl32(0.05) − 0.05)
// and nothing else.
func TestAssembleKernelFloat32Epsilon(t *testing.T) {
	for _, d := range []int{2, 3} {
		w, p, a := kernelRawTensors(rand.New(rand.NewPCG(45, uint64(d))), 2, 3, 4, d, 0.6)
		cfg := device.DefaultKernelConfig(2.5)
		plain, err := NewAssembleKernel(testDev, cfg).Do(w, p, a)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Float32Epsilon = true
		f32, err := NewAssembleKernel(testDev, cfg).Do(w, p, a)
		if err != nil {
			t.Fatal(err)
		}
		y0, y1 := plain.Data().([]float64), f32.Data().([]float64)
		shift := cfg.CovRange() * (float64(float32(0.05)) - 0.05)
		s := mixture.PackedLen(d)
		for i := range y0 {
			want := 0.0
			if c := i%s - 1 - d; c >= 0 && c%(d+1) == 0 {
				want = shift
			}
			if math.Abs(y1[i]-y0[i]-want) > 1e-15 {
				t.Fatalf("%dD: packed[%d] moves by %g with the float32 ε, want %g", d, i, y1[i]-y0[i], want)
			}
		}
	}
}

// TestAssembleKernelInit checks the packed kernel of the reference's initial
// values: identity factors give Σ = (r/3)²·1.05·I, and the output is a valid
// mixture batch.
func TestAssembleKernelInit(t *testing.T) {
	const r = 2.5
	w := tensor.New(tensor.WithShape(1, 1, 2), tensor.WithBacking([]float64{0, 1}))
	p := tensor.New(tensor.WithShape(1, 1, 2, 3), tensor.WithBacking([]float64{0, 0, 0, 0, 1, 0}))
	a := tensor.New(tensor.WithShape(1, 1, 2, 3, 3), tensor.WithBacking([]float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}))
	out, err := assembleOp(r).Do(w, p, a)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Data().([]float64)
	l := mixture.Layout{B: 1, C: 1, N: 2, D: 3}
	if err := mixture.Validate(got, l); err != nil {
		t.Fatal(err)
	}
	v := (r / 3) * (r / 3) * 1.05
	want := []float64{0.1, 0, 0, 0, v, 0, 0, 0, v, 0, 0, 0, v, 1.1, 0, r, 0, v, 0, 0, 0, v, 0, 0, 0, v}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("packed[%d] = %g, want %g", i, got[i], want[i])
		}
	}
}

// TestKernelOpsFloat32 checks that the float32 ops match float64.
func TestKernelOpsFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 0))
	w, p, a := kernelRawTensors(rng, 3, 2, 5, 3, 1.3)
	for _, c := range []struct {
		op G.Op
		in []*tensor.Dense
	}{
		{assembleOp(2), []*tensor.Dense{w, p, a}},
		{NewWeightDecay(testDev), []*tensor.Dense{w, a}},
	} {
		wantFloat32Op(t, c.op, c.in...)
	}
}

func TestKernelOpsBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 0))
	w, p, a := kernelRawTensors(rng, 2, 3, 4, 2, 1)
	zeros := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64))
	}
	withNaN := func(x *tensor.Dense, i int) *tensor.Dense {
		y := x.Clone().(*tensor.Dense)
		y.Data().([]float64)[i] = math.NaN()
		return y
	}
	w32 := tensor.New(tensor.WithShape(2, 3, 4), tensor.Of(tensor.Float32))
	cases := []struct {
		name string
		op   G.Op
		in   []G.Value
		want []string
	}{
		{"assemble: radius 0", assembleOp(0), []G.Value{w, p, a}, []string{"gm.AssembleKernel", "radius", "got 0"}},
		{"assemble: radius NaN", assembleOp(math.NaN()), []G.Value{w, p, a}, []string{"gm.AssembleKernel", "radius", "NaN"}},
		{"assemble: radius Inf", assembleOp(math.Inf(1)), []G.Value{w, p, a}, []string{"gm.AssembleKernel", "radius", "+Inf"}},
		{"assemble: two inputs", assembleOp(1), []G.Value{w, p}, []string{"gm.AssembleKernel", "expected 3 inputs", "got 2"}},
		{"assemble: weights rank 4", assembleOp(1), []G.Value{zeros(2, 3, 4, 1), p, a}, []string{"gm.AssembleKernel", `"weights_raw"`, "rank 3"}},
		{"assemble: zero kernels", assembleOp(1), []G.Value{zeros(2, 3, 0), zeros(2, 3, 0, 2), zeros(2, 3, 0, 2, 2)}, []string{"gm.AssembleKernel", `"weights_raw"`, "≥ 1", "axis 2"}},
		{"assemble: D = 4", assembleOp(1), []G.Value{w, zeros(2, 3, 4, 4), zeros(2, 3, 4, 4, 4)}, []string{"gm.AssembleKernel", `"positions_raw"`, "D = 2 or 3", "got 4"}},
		{"assemble: positions count", assembleOp(1), []G.Value{w, zeros(2, 3, 5, 2), a}, []string{"gm.AssembleKernel", `"positions_raw"`, "(2, 3, 4, 2)", "(2, 3, 5, 2)"}},
		{"assemble: factors D", assembleOp(1), []G.Value{w, p, zeros(2, 3, 4, 3, 3)}, []string{"gm.AssembleKernel", `"factors"`, "(2, 3, 4, 2, 2)", "(2, 3, 4, 3, 3)"}},
		{"assemble: NaN weight", assembleOp(1), []G.Value{withNaN(w, 5), p, a}, []string{"gm.AssembleKernel", `"weights_raw"`, "non-finite", "index 5"}},
		{"assemble: NaN factor", assembleOp(1), []G.Value{w, p, withNaN(a, 7)}, []string{"gm.AssembleKernel", `"factors"`, "non-finite"}},
		{"assemble: mixed dtypes", assembleOp(1), []G.Value{w32, p, a}, []string{"gm.AssembleKernel", `"positions_raw"`, "float64", "float32"}},
		{"assemble: factors overflow", assembleOp(1), []G.Value{w, p, func() *tensor.Dense {
			y := a.Clone().(*tensor.Dense)
			y.Data().([]float64)[0] = 1e200
			return y
		}()}, []string{"gm.AssembleKernel", `"factors"`, "overflows"}},
		// 1e40 is a float64 but no float32: the reference's ε overflows.
		{"assemble: float32 ε overflow", assembleOpWith(func(c *KernelConfig) { c.Float32Epsilon = true }), []G.Value{w, p, func() *tensor.Dense {
			y := a.Clone().(*tensor.Dense)
			y.Data().([]float64)[0] = 1e20
			return y
		}()}, []string{"gm.AssembleKernel", `"factors"`, "overflows", "+Inf"}},
		{"assemble: epsilon 0", assembleOpWith(func(c *KernelConfig) { c.CovEpsilon = 0 }), []G.Value{w, p, a}, []string{"gm.AssembleKernel", "covariance epsilon", "got 0"}},
		{"assemble: weight sd NaN", assembleOpWith(func(c *KernelConfig) { c.WeightSD = math.NaN() }), []G.Value{w, p, a}, []string{"gm.AssembleKernel", "weight sd NaN"}},
		{"decay: D = 1", NewWeightDecay(testDev), []G.Value{w, zeros(2, 3, 4, 1, 1)}, []string{"gm.WeightDecay", `"factors"`, "D = 2 or 3", "got 1"}},
		{"decay: shape mismatch", NewWeightDecay(testDev), []G.Value{w, zeros(2, 3, 5, 2, 2)}, []string{"gm.WeightDecay", `"factors"`, "(2, 3, 4, 2, 2)"}},
		{"decay: factors rank 4", NewWeightDecay(testDev), []G.Value{w, zeros(2, 3, 4, 4)}, []string{"gm.WeightDecay", `"factors"`, "rank 5"}},
		{"decay: NaN factor", NewWeightDecay(testDev), []G.Value{w, withNaN(a, 3)}, []string{"gm.WeightDecay", `"factors"`, "non-finite"}},
		{"decay: Inf weight", NewWeightDecay(testDev), []G.Value{func() *tensor.Dense {
			y := w.Clone().(*tensor.Dense)
			y.Data().([]float64)[1] = math.Inf(-1)
			return y
		}(), a}, []string{"gm.WeightDecay", `"weights_raw"`, "non-finite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.op.Do(c.in...)
			gmtest.WantErr(t, err, c.want...)
		})
	}
	t.Run("graph construction", func(t *testing.T) {
		g := G.NewGraph()
		wn := G.NewTensor(g, tensor.Float64, 3, G.WithShape(2, 3, 4), G.WithName("w"))
		pn := G.NewTensor(g, tensor.Float64, 4, G.WithShape(2, 3, 4, 3), G.WithName("p"))
		an := G.NewTensor(g, tensor.Float64, 5, G.WithShape(2, 3, 4, 2, 2), G.WithName("a"))
		_, err := G.ApplyOp(assembleOp(1), wn, pn, an)
		gmtest.WantErr(t, err, "gm.AssembleKernel", `"factors"`)
	})
}

// TestAssembleKernelGradsShared runs the kernel assembly's three grad ops
// with the forward's memo, as in a graph: the first computes all three
// gradients in one device call and the others copy theirs, bitwise what
// each grad op returns alone; for another incoming gradient on the same
// forward, and for the same incoming gradient after a forward run on other
// inputs, the next grad op computes them again.
func TestAssembleKernelGradsShared(t *testing.T) {
	fake, log := newRecordingDevice()
	useDevice(t, fake)
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(43, uint64(d)))
		w, p, a := kernelRawTensors(rng, 2, 3, 4, d, 0.6)
		plain := asOp(assembleOp(2))
		shared := &op{k32: plain.k32, k64: plain.k64, dev: plain.dev, id: plain.id, memo: &memo{}}
		y, err := shared.Do(w, p, a)
		if err != nil {
			t.Fatal(err)
		}
		g1 := convTensor(4, y.Shape()...)
		for round, g := range []*tensor.Dense{convTensor(3, y.Shape()...), g1, g1} {
			if round == 2 { // a new forward run on other inputs
				w, p, a = kernelRawTensors(rng, 2, 3, 4, d, 0.6)
				if y, err = shared.Do(w, p, a); err != nil {
					t.Fatal(err)
				}
			}
			log.take()
			for j, wrt := range []int{1, 0, 2} {
				got, err := shared.gradOp(wrt).Do(w, p, a, y, g)
				if err != nil {
					t.Fatal(err)
				}
				want := 0
				if j == 0 {
					want = 1
				}
				if calls := log.take(); len(calls) != want {
					t.Errorf("%dD, gradient %d, grad op %d: %d device calls %v, want %d", d, round, wrt, len(calls), calls, want)
				}
				alone, err := plain.gradOp(wrt).Do(w, p, a, y, g)
				if err != nil {
					t.Fatal(err)
				}
				log.take()
				if !slicesEqual(got.Data(), alone.Data()) {
					t.Errorf("%dD, gradient %d, grad op %d: differs from the grad op alone", d, round, wrt)
				}
			}
		}
	}
}
