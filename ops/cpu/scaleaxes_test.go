package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// scaleAxesForms are the three shapes of the factors the op accepts, as
// rows along the batch and the channels: [D], [B, D] and [B, C, D].
var scaleAxesForms = []struct {
	name                  string
	perSample, perMixture bool
}{
	{"shared [D]", false, false},
	{"per sample [B, D]", true, false},
	{"per mixture [B, C, D]", true, true},
}

// scaleAxesInputs returns a batch of layout l and factors of a form for it,
// drawn from rng, and the factors' rows sb and sc.
func scaleAxesInputs(rng *rand.Rand, l mixture.Layout, perSample, perMixture bool) (x, s []float64, sb, sc int) {
	sb, sc = 1, 1
	if perSample {
		sb = l.B
	}
	if perMixture {
		sc = l.C
	}
	x = gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), l.B, l.C, l.N, l.D)
	s = gmtest.Scales[float64](rng, sb*sc*l.D)
	return x, s, sb, sc
}

// forScaleAxesForms runs f as a subtest for every form in 2D and 3D with a
// generator seeded from seed, the form and D.
func forScaleAxesForms(t *testing.T, seed uint64, f func(t *testing.T, rng *rand.Rand, d int, perSample, perMixture bool)) {
	for i, form := range scaleAxesForms {
		for _, d := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%dD", form.name, d), func(t *testing.T) {
				f(t, rand.New(rand.NewPCG(seed, uint64(10*i+d))), d, form.perSample, form.perMixture)
			})
		}
	}
}

// TestScaleAxesBackward checks both destinations of the device method
// against central differences of L = Σ y·r, for every form of the factors
// (a shared factor's gradient sums over the mixtures that read it), and that
// a nil destination leaves the other one as it is.
func TestScaleAxesBackward(t *testing.T) {
	forScaleAxesForms(t, 61, func(t *testing.T, rng *rand.Rand, d int, perSample, perMixture bool) {
		l := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		x, s, sb, sc := scaleAxesInputs(rng, l, perSample, perMixture)
		r := gmtest.Normal(rng, l.Len())
		y := make([]float64, l.Len())
		loss := func() float64 {
			ScaleAxes(y, x, s, l, sb, sc)
			return gmtest.Dot(y, r)
		}
		k := Kernels[float64]{}
		dx, ds := make([]float64, len(x)), make([]float64, len(s))
		if err := k.ScaleAxesBackward(dx, ds, r, x, s, l, sb, sc); err != nil {
			t.Fatal(err)
		}
		gmtest.WantGrad(t, "∂L/∂x", dx, x, loss)
		gmtest.WantGrad(t, "∂L/∂s", ds, s, loss)

		dxOnly, dsOnly := make([]float64, len(x)), make([]float64, len(s))
		if err := k.ScaleAxesBackward(dxOnly, nil, r, x, s, l, sb, sc); err != nil {
			t.Fatal(err)
		}
		if err := k.ScaleAxesBackward(nil, dsOnly, r, x, s, l, sb, sc); err != nil {
			t.Fatal(err)
		}
		gmtest.WantClose(t, "∂L/∂x alone", dxOnly, dx, 0)
		gmtest.WantClose(t, "∂L/∂s alone", dsOnly, ds, 0)
	})
}

// TestScaleAxesHandMade checks one 2D Gaussian scaled by s = (3, −½), whose
// result is exact in float64: μ = (1, 2) → (3, −1) and
// Σ = [[2, ½], [½, 1]] → [[18, −¾], [−¾, ¼]].
func TestScaleAxesHandMade(t *testing.T) {
	l := mixture.Layout{B: 1, C: 1, N: 1, D: 2}
	x := []float64{0.7, 1, 2, 2, 0.5, 0.5, 1}
	y := make([]float64, len(x))
	ScaleAxes(y, x, []float64{3, -0.5}, l, 1, 1)
	want := []float64{0.7, 3, -1, 18, -0.75, -0.75, 0.25}
	gmtest.WantClose(t, "scaled Gaussian", y, want, 0)
}

// TestScaleAxesProperties checks, for every form of the factors on random
// batches, what per-axis scaling must satisfy: s = 1 is the identity,
// scaling by s and then by 1/s returns the input, the weights (the
// integrals) are untouched, the result is a valid mixture, and evaluated at
// S·p it equals the input at p divided by |det S|, i.e. the amplitudes change
// consistently with the moved mass. The evaluation check computes each
// mixture's factors here, independently of the kernel's row indexing.
func TestScaleAxesProperties(t *testing.T) {
	forScaleAxesForms(t, 62, func(t *testing.T, rng *rand.Rand, d int, perSample, perMixture bool) {
		l := mixture.Layout{B: 3, C: 2, N: 5, D: d}
		x, s, sb, sc := scaleAxesInputs(rng, l, perSample, perMixture)
		y := make([]float64, l.Len())

		ones := make([]float64, len(s))
		for i := range ones {
			ones[i] = 1
		}
		ScaleAxes(y, x, ones, l, sb, sc)
		gmtest.WantClose(t, "s = 1", y, x, 0)

		ScaleAxes(y, x, s, l, sb, sc)
		if err := mixture.Validate(y, l); err != nil {
			t.Fatalf("scaled batch is not a valid mixture: %v", err)
		}
		inv := make([]float64, len(s))
		for i, f := range s {
			inv[i] = 1 / f
		}
		back := make([]float64, l.Len())
		ScaleAxes(back, y, inv, l, sb, sc)
		gmtest.WantClose(t, "s then 1/s", back, x, 1e-14) // a few float64 roundings

		ix, iy := make([]float64, l.Mixtures()), make([]float64, l.Mixtures())
		Integrate(ix, x, l)
		Integrate(iy, y, l)
		gmtest.WantClose(t, "integrals", iy, ix, 0)

		// Points p [B, C, M, D] and their images S·p with the factors of
		// each mixture's row.
		const m = 6
		p := gmtest.Uniform[float64](rng, l.Mixtures()*m*d, -3, 3)
		sp := make([]float64, len(p))
		det := make([]float64, l.Mixtures())
		for b := range l.B {
			for c := range l.C {
				mi, row := b*l.C+c, 0
				if perSample {
					row = b
				}
				if perMixture {
					row = b*l.C + c
				}
				f := s[row*d : (row+1)*d]
				det[mi] = 1
				for j := range d {
					det[mi] *= math.Abs(f[j])
				}
				for i := mi * m; i < (mi+1)*m; i++ {
					for j := range d {
						sp[i*d+j] = f[j] * p[i*d+j]
					}
				}
			}
		}
		vx, vy := make([]float64, l.Mixtures()*m), make([]float64, l.Mixtures()*m)
		Evaluate(vx, x, p, l, l.B, l.C, m)
		Evaluate(vy, y, sp, l, l.B, l.C, m)
		for i := range vy {
			vy[i] *= det[i/m]
		}
		gmtest.WantClose(t, "|det S|·f_y(S·p) against f_x(p)", vy, vx, 1e-12)
	})
}

// TestScaleAxesIsotropic checks that equal factors on every axis give
// ScaleMixtures' result bitwise: both multiply by s and by the product s·s.
func TestScaleAxesIsotropic(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(63, uint64(d)))
		l := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		x := gmtest.Mixtures[float32](rng, gmtest.StandardSpec(), l.B, l.C, l.N, d)
		f := gmtest.Scales[float32](rng, l.Mixtures())
		s := make([]float32, 0, l.Mixtures()*d)
		for _, v := range f {
			for range d {
				s = append(s, v)
			}
		}
		got, want := make([]float32, l.Len()), make([]float32, l.Len())
		ScaleAxes(got, x, s, l, l.B, l.C)
		ScaleMixtures(want, x, l, f)
		gmtest.WantClose(t, fmt.Sprintf("%dD isotropic", d), got, want, 0)
	}
}

// TestScaleAxesFloat32 checks that the float32 kernels match float64 within
// float32 precision, forward and both gradients, for every form.
func TestScaleAxesFloat32(t *testing.T) {
	forScaleAxesForms(t, 64, func(t *testing.T, rng *rand.Rand, d int, perSample, perMixture bool) {
		l := mixture.Layout{B: 3, C: 4, N: 50, D: d}
		x64, s64, sb, sc := scaleAxesInputs(rng, l, perSample, perMixture)
		g64 := gmtest.Normal(rng, l.Len())
		x32, s32, g32 := gmtest.To32(x64), gmtest.To32(s64), gmtest.To32(g64)
		y64, y32 := make([]float64, l.Len()), make([]float32, l.Len())
		ScaleAxes(y64, x64, s64, l, sb, sc)
		ScaleAxes(y32, x32, s32, l, sb, sc)
		dx64, dx32 := make([]float64, l.Len()), make([]float32, l.Len())
		ds64, ds32 := make([]float64, len(s64)), make([]float32, len(s64))
		if err := (Kernels[float64]{}).ScaleAxesBackward(dx64, ds64, g64, x64, s64, l, sb, sc); err != nil {
			t.Fatal(err)
		}
		if err := (Kernels[float32]{}).ScaleAxesBackward(dx32, ds32, g32, x32, s32, l, sb, sc); err != nil {
			t.Fatal(err)
		}
		gmtest.WantClose(t, "forward", y32, y64, 1e-6)
		gmtest.WantClose(t, "∂L/∂x", dx32, dx64, 1e-6)
		gmtest.WantClose(t, "∂L/∂s", ds32, ds64, 1e-6)
	})
}
