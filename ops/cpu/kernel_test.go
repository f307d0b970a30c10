package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
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
	for _, c := range []struct {
		d   int
		f32 bool
	}{{2, false}, {3, false}, {2, true}, {3, true}} {
		d := c.d
		t.Run(fmt.Sprintf("%dD_float32eps%v", d, c.f32), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(d)))
			l := mixture.Layout{B: 2, C: 3, N: 4, D: d}
			cfg := device.DefaultKernelConfig(2.5)
			cfg.WeightSD = 0.7
			cfg.Float32Epsilon = c.f32
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

// TestKernelEpsilonFloat32 checks the Float32Epsilon rounding of ε against
// the reference's float32 arithmetic, written out: the float64 product of the
// float32 constant and the float32 maximum, rounded once to float32. The
// factors are random with max|A·Aᵀ| < 1 (ε on its floor) and > 1, and
// 1.100011·I, for which rounding only the product, or only one of its
// factors, gives another float32: there the test tells the reference's order
// from the others. For float64 factors the result must differ from the
// default ε, or the case would not show the option; for float32 factors,
// whose default ε the assembly rounds to float32 anyway, the two may agree.
func TestKernelEpsilonFloat32(t *testing.T) {
	fl32 := func(v float64) float64 { return float64(float32(v)) }
	for _, d := range []int{2, 3} {
		l := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		_, _, small := kernelRaw(rand.New(rand.NewPCG(24, uint64(d))), l, 0.3)
		_, _, large := kernelRaw(rand.New(rand.NewPCG(25, uint64(d))), l, 1.5)
		const x = 1.100011
		diag := make([]float64, d*d)
		for c := range d {
			diag[c*(d+1)] = x
		}
		if m := fl32(fl32(0.05) * fl32(x*x)); m == fl32(0.05*x*x) || m == fl32(fl32(0.05)*x*x) || m == fl32(0.05*fl32(x*x)) {
			t.Fatalf("%dD: the roundings of ε for x·I agree; the case does not tell them apart", d)
		}
		for _, c := range []struct {
			name  string
			a     []float64
			floor bool
		}{{"floor", small, true}, {"driven", large, false}, {"x·I", diag, false}} {
			cfg := device.DefaultKernelConfig(2.5)
			plain := KernelEpsilon(c.a, d, cfg)
			if c.floor != (plain == cfg.CovEpsilon) {
				t.Fatalf("%dD %s: ε = %v, on the floor %v", d, c.name, plain, !c.floor)
			}
			cfg.Float32Epsilon = true
			a32 := gmtest.To32(c.a)
			for _, v := range []struct {
				dtype  string
				got, m float64
			}{
				{"float64", KernelEpsilon(c.a, d, cfg), maxGram(c.a, d)},
				{"float32", KernelEpsilon(a32, d, cfg), maxGram(a32, d)},
			} {
				want := fl32(fl32(0.05) * fl32(math.Max(1, v.m)))
				if math.Float64bits(v.got) != math.Float64bits(want) {
					t.Errorf("%dD %s %s: ε = %v, want fl32(fl32(0.05)·fl32(%v)) = %v", d, c.name, v.dtype, v.got, v.m, want)
				}
			}
			if got := KernelEpsilon(c.a, d, cfg); got == plain {
				t.Errorf("%dD %s: float32 ε %v equals the float64 ε; the case does not show the rounding", d, c.name, got)
			}
		}
	}
}

// maxGram returns max |A·Aᵀ| over the d×d factors a.
func maxGram[T Float](a []T, d int) float64 {
	var m [9]T
	mx := 0.0
	for i := 0; i+d*d <= len(a); i += d * d {
		gram(d, a[i:i+d*d], m[:d*d])
		for _, v := range m[:d*d] {
			mx = math.Max(mx, math.Abs(float64(v)))
		}
	}
	return mx
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

// TestWeightDecayFactorsGeneric checks the fixed-size loops of
// WeightDecayFactorsBackward against the general d×d formula they replaced
// (gram, E = A·Aᵀ − I, symGradFactor): bitwise on amd64, where Go does not
// fuse multiply-adds, so training there is unchanged; within float32
// rounding elsewhere, where the two expressions may fuse differently.
func TestWeightDecayFactorsGeneric(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(5, uint64(d)))
		a := gmtest.Uniform[float32](rng, 50*d*d, -2, 2)
		got, want := make([]float32, len(a)), make([]float32, len(a))
		const g = 0.7
		WeightDecayFactorsBackward(got, a, d, g)
		var e [9]float32
		dd := d * d
		c := 2 * float32(g) / float32(len(a))
		for i := 0; i < len(a); i += dd {
			gram(d, a[i:i+dd], e[:dd])
			for r := range d {
				e[r*(d+1)]--
			}
			symGradFactor(d, e[:dd], a[i:i+dd], want[i:i+dd], c)
		}
		tol := 1e-5 * gmtest.MaxAbs(want)
		if runtime.GOARCH == "amd64" {
			tol = 0
		}
		for i := range got {
			if math.Abs(float64(got[i]-want[i])) > tol {
				t.Errorf("%dD: ∂L/∂A[%d] = %v, the general formula %v", d, i, got[i], want[i])
				break
			}
		}
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
