package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// kernelRaw returns random raw tensors for layout l; the factors have entries
// of size scale, so scale > 1 makes ε depend on max|A·Aᵀ|.
func kernelRaw(rng *rand.Rand, l mixture.Layout, scale float64) (w, p, a []float64) {
	n := l.B * l.C * l.N
	w, p, a = make([]float64, n), make([]float64, n*l.D), make([]float64, n*l.D*l.D)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	for i := range p {
		p[i] = 2*rng.Float64() - 1
	}
	for i := range a {
		a[i] = scale * (2*rng.Float64() - 1)
	}
	return w, p, a
}

// TestAssembleKernelBackward checks the three gradients of the kernel
// assembly with ε frozen (computed once, as the reference detaches it), with
// factors large enough that ε follows max|A·Aᵀ| rather than the floor 1.
func TestAssembleKernelBackward(t *testing.T) {
	for _, d := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dD", d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(d)))
			l := mixture.Layout{B: 2, C: 3, N: 4, D: d}
			cfg := device.DefaultKernelConfig(2.5)
			cfg.WeightSD = 0.7
			w, p, a := kernelRaw(rng, l, 1.5)
			eps := KernelEpsilon(a, d, cfg)
			if eps <= cfg.CovEpsilon {
				t.Fatalf("ε = %g sits on its floor; the test wants it driven by A", eps)
			}
			r := gmtest.Normal(rng, l.Len())
			out := make([]float64, l.Len())
			loss := func() float64 {
				AssembleKernel(out, w, p, a, l, cfg, eps)
				return gmtest.Dot(out, r)
			}
			dw, dp, da := make([]float64, len(w)), make([]float64, len(p)), make([]float64, len(a))
			KernelWeightsBackward(dw, r, l, cfg)
			KernelPositionsBackward(dp, r, l, cfg)
			KernelFactorsBackward(da, r, a, l, cfg)
			for _, c := range []struct {
				name   string
				x, got []float64
			}{{"weights", w, dw}, {"positions", p, dp}, {"factors", a, da}} {
				gmtest.WantGrad(t, c.name, c.got, c.x, loss)
			}
		})
	}
}

// TestAssembleKernelValues checks the assembled kernel against the formulas
// written out for one hand-made 2D Gaussian.
func TestAssembleKernelValues(t *testing.T) {
	l := mixture.Layout{B: 1, C: 1, N: 1, D: 2}
	cfg := device.DefaultKernelConfig(3)
	w, p, a := []float64{0.5}, []float64{1, -2}, []float64{2, 0, 1, 1}
	// A·Aᵀ = [[4, 2], [2, 2]] → ε = 0.05·4 = 0.2; (r/3)² = 1.
	eps := KernelEpsilon(a, 2, cfg)
	if math.Abs(eps-0.2) > 1e-15 {
		t.Fatalf("ε = %g, want 0.2", eps)
	}
	out := make([]float64, l.Len())
	AssembleKernel(out, w, p, a, l, cfg, eps)
	want := []float64{0.6, 3, -6, 4.2, 2, 2, 2.2}
	for i := range want {
		if math.Abs(out[i]-want[i]) > 1e-14 {
			t.Errorf("packed[%d] = %g, want %g", i, out[i], want[i])
		}
	}
	if eps := KernelEpsilon([]float64{0.1, 0, 0, 0.1}, 2, cfg); eps != 0.05 {
		t.Errorf("small factors: ε = %g, want the floor 0.05", eps)
	}
}

func TestWeightDecayBackward(t *testing.T) {
	for _, d := range []int{2, 3} {
		t.Run(fmt.Sprintf("%dD", d), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(22, uint64(d)))
			l := mixture.Layout{B: 3, C: 2, N: 5, D: d}
			w, _, a := kernelRaw(rng, l, 1)
			const g = 1.7
			loss := func() float64 { return g * WeightDecay(w, a, d) }
			dw, da := make([]float64, len(w)), make([]float64, len(a))
			WeightDecayWeightsBackward(dw, w, g)
			WeightDecayFactorsBackward(da, a, d, g)
			gmtest.WantGrad(t, "weights", dw, w, loss)
			gmtest.WantGrad(t, "factors", da, a, loss)
		})
	}
}

func TestWeightDecayValues(t *testing.T) {
	// Identity factors cost nothing; w = (1, −3) costs (1 + 9)/2.
	ident := []float64{1, 0, 0, 1, 1, 0, 0, 1}
	if got := WeightDecay([]float64{1, -3}, ident, 2); math.Abs(got-5) > 1e-15 {
		t.Errorf("identity factors: %g, want 5", got)
	}
	// A = 2I: A·Aᵀ − I = 3I, mean of squares over 4 entries = 9·2/4.
	if got := WeightDecay([]float64{0}, []float64{2, 0, 0, 2}, 2); math.Abs(got-4.5) > 1e-15 {
		t.Errorf("A = 2I: %g, want 4.5", got)
	}
}

// TestKernelFloat32 checks that the float32 kernels match float64.
func TestKernelFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(23, uint64(d)))
		l := mixture.Layout{B: 4, C: 3, N: 5, D: d}
		cfg := device.DefaultKernelConfig(2.5)
		w, p, a := kernelRaw(rng, l, 1.2)
		g := gmtest.Normal(rng, l.Len())
		w32, p32, a32, g32 := gmtest.To32(w), gmtest.To32(p), gmtest.To32(a), gmtest.To32(g)
		out64, out32 := make([]float64, l.Len()), make([]float32, l.Len())
		AssembleKernel(out64, w, p, a, l, cfg, KernelEpsilon(a, d, cfg))
		AssembleKernel(out32, w32, p32, a32, l, cfg, KernelEpsilon(a32, d, cfg))
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 assembly", d), out32, out64, 1e-5)
		da64, da32 := make([]float64, len(a)), make([]float32, len(a))
		KernelFactorsBackward(da64, g, a, l, cfg)
		KernelFactorsBackward(da32, g32, a32, l, cfg)
		gmtest.WantClose(t, fmt.Sprintf("%dD float32 factor gradient", d), da32, da64, 1e-5)
		if got, want := WeightDecay(w32, a32, d), WeightDecay(w, a, d); math.Abs(got-want) > 1e-5*want {
			t.Errorf("%dD weight decay: float32 %g, float64 %g", d, got, want)
		}
	}
}
