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

// convInputs returns the data and kernel layouts of a convolution test case
// and a data and a kernel batch drawn from gmtest.StandardSpec.
func convInputs(rng *rand.Rand, d, b, fi, ni, fo, nk int) (lx, lk mixture.Layout, x, k []float64) {
	lx, lk = mixture.Layout{B: b, C: fi, N: ni, D: d}, mixture.Layout{B: fo, C: fi, N: nk, D: d}
	x = gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), b, fi, ni, d)
	k = gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), fo, fi, nk, d)
	return lx, lk, x, k
}

// convRun returns Conv's output for x and k and its layout.
func convRun(x, k []float64, lx, lk mixture.Layout) ([]float64, mixture.Layout) {
	ly := device.ConvLayout(lx, lk)
	y := make([]float64, ly.Len())
	Conv(y, x, k, lx, lk)
	return y, ly
}

// TestConvComponentOrder checks every output field against the reference
// index map n = i + Ni·(c + Fi·j) and the moment sums, on sizes where every
// dimension differs so a swapped index cannot pass.
func TestConvComponentOrder(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(11, uint64(d)))
		lx, lk, x, k := convInputs(rng, d, 2, 3, 4, 5, 2)
		y, ly := convRun(x, k, lx, lk)
		if want := (mixture.Layout{B: 2, C: 5, N: 3 * 4 * 2, D: d}); ly != want {
			t.Fatalf("%dD: layout %v, want %v", d, ly, want)
		}
		s := lx.Stride()
		for b := range lx.B {
			for o := range lk.B {
				for c := range lx.C {
					for i := range lx.N {
						for j := range lk.N {
							yg := y[ly.Offset(b, o, i+lx.N*(c+lx.C*j)):][:s]
							xg := x[lx.Offset(b, c, i):][:s]
							kg := k[lk.Offset(o, c, j):][:s]
							if yg[0] != xg[0]*kg[0] {
								t.Fatalf("%dD (b=%d,o=%d,c=%d,i=%d,j=%d): weight %g, want %g", d, b, o, c, i, j, yg[0], xg[0]*kg[0])
							}
							for q := 1; q < s; q++ {
								if yg[q] != xg[q]+kg[q] {
									t.Fatalf("%dD (b=%d,o=%d,c=%d,i=%d,j=%d): packed value %d is %g, want %g", d, b, o, c, i, j, q, yg[q], xg[q]+kg[q])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestConvIntegrals checks ∫(X_c ⊛ K_oc) = ∫X_c·∫K_oc for each channel pair
// and ∫Y_o = Σ_c (Σ_i w_x)(Σ_j w_k) for each output mixture.
func TestConvIntegrals(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(12, uint64(d)))
		lx, lk, x, k := convInputs(rng, d, 3, 4, 5, 2, 3)
		y, ly := convRun(x, k, lx, lk)
		ix, ik, iy := make([]float64, lx.Mixtures()), make([]float64, lk.Mixtures()), make([]float64, ly.Mixtures())
		Integrate(ix, x, lx)
		Integrate(ik, k, lk)
		Integrate(iy, y, ly)
		for b := range lx.B {
			for o := range lk.B {
				var total float64
				for c := range lx.C {
					want := ix[b*lx.C+c] * ik[o*lk.C+c]
					total += want
					var got float64
					for n := range ly.N {
						if (n/lx.N)%lx.C == c {
							got += y[ly.Offset(b, o, n)]
						}
					}
					if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
						t.Errorf("%dD (b=%d,o=%d,c=%d): channel-pair integral %.15g, want %.15g", d, b, o, c, got, want)
					}
				}
				if got := iy[b*lk.B+o]; math.Abs(got-total) > 1e-12*math.Max(1, math.Abs(total)) {
					t.Errorf("%dD (b=%d,o=%d): output integral %.15g, want Σ_c ∫X·∫K = %.15g", d, b, o, got, total)
				}
			}
		}
	}
}

// convGridTol bounds max|analytic − numerical| / max|analytic| in
// TestConvGrid. Both error sources of the Riemann sum are far below it: the
// integrand X(x)·K(z−x) is a Gaussian in x whose covariance has eigenvalues
// ≥ 0.25 (harmonic mean of two ≥ 0.5), so the lattice-sum error
// ~exp(−2π²·0.25/h²) = exp(−493) is nil for h = 0.1; and cutting the plane at
// |x_i| = 10 drops only tails ≥ 8 ≥ 6.5σ from every mean (σ² ≤ 1.5), of
// relative size ≲ exp(−64/3) ≈ 5e-10. The bound leaves room for that.
const convGridTol = 1e-8

// TestConvGrid compares the analytic 2D convolution with a numerical one:
// data and kernels are sampled on the lattice hℤ² ∩ [−10, 10)² and
// convolved by a direct sum, Y_o(z) ≈ h² Σ_c Σ_x X_c(x)·K_oc(z − x), at lattice
// points z ∈ [−4, 4]², where the analytic output has its mass.
func TestConvGrid(t *testing.T) {
	const (
		h    = 0.1
		m    = 100 // samples per half axis: x = j·h, j ∈ [−m, m)
		side = 2 * m
	)
	rng := rand.New(rand.NewPCG(13, 2))
	lx, lk, x, k := convInputs(rng, 2, 1, 2, 3, 2, 2)
	y, ly := convRun(x, k, lx, lk)

	sample := func(data []float64, l mixture.Layout, mi int) []float64 {
		ps := make([]mixture.Prepared[float64], l.N)
		mixture.PrepareMixture(2, mixture.Mixture(data, l, mi), ps)
		grid := make([]float64, side*side)
		for r := range side {
			for c := range side {
				p := []float64{float64(r-m) * h, float64(c-m) * h}
				grid[r*side+c] = mixture.EvalMixture(2, ps, p)
			}
		}
		return grid
	}
	xs := make([][]float64, lx.Mixtures())
	for mi := range xs {
		xs[mi] = sample(x, lx, mi)
	}
	ks := make([][]float64, lk.Mixtures())
	for mi := range ks {
		ks[mi] = sample(k, lk, mi)
	}

	var maxErr, maxVal float64
	for o := range lk.B {
		ps := make([]mixture.Prepared[float64], ly.N)
		mixture.PrepareMixture(2, mixture.Mixture(y, ly, o), ps)
		for pr := -40; pr <= 40; pr += 10 {
			for pc := -40; pc <= 40; pc += 10 {
				var num float64
				for c := range lx.C {
					xg, kg := xs[c], ks[o*lk.C+c]
					for r := range side {
						kr := pr - (r - m) + m // lattice row of z − x in the kernel grid
						if kr < 0 || kr >= side {
							continue
						}
						for cc := range side {
							kc := pc - (cc - m) + m
							if kc < 0 || kc >= side {
								continue
							}
							num += xg[r*side+cc] * kg[kr*side+kc]
						}
					}
				}
				num *= h * h
				ana := mixture.EvalMixture(2, ps, []float64{float64(pr) * h, float64(pc) * h})
				maxErr = math.Max(maxErr, math.Abs(ana-num))
				maxVal = math.Max(maxVal, math.Abs(ana))
			}
		}
	}
	if maxVal < 1e-3 {
		t.Fatalf("test is vacuous: max |Y| = %g on the query points", maxVal)
	}
	rel := maxErr / maxVal
	t.Logf("max |Y| %.3g, max error %.3g, relative %.3g", maxVal, maxErr, rel)
	if rel > convGridTol {
		t.Errorf("analytic vs grid convolution: max error %.3g, relative %.3g > %g", maxErr, rel, convGridTol)
	}
}

// TestConvGradient checks ConvBackwardData and ConvBackwardKernels against
// central differences of L = Σ y·r in float64.
func TestConvGradient(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(14, uint64(d)))
		lx, lk, x, k := convInputs(rng, d, 2, 3, 4, 2, 3)
		r := gmtest.Normal(rng, device.ConvLayout(lx, lk).Len())
		loss := func() float64 {
			y, _ := convRun(x, k, lx, lk)
			return gmtest.Dot(y, r)
		}

		dx := make([]float64, len(x))
		ConvBackwardData(dx, r, k, lx, lk)
		gmtest.WantGrad(t, fmt.Sprintf("%dD data gradient", d), dx, x, loss)
		dk := make([]float64, len(k))
		ConvBackwardKernels(dk, r, x, lx, lk)
		gmtest.WantGrad(t, fmt.Sprintf("%dD kernel gradient", d), dk, k, loss)
	}
}

// TestConvFloat32 runs forward and both backward kernels in float32 and
// float64 on the same inputs. Forward values are one product or sum of
// float32 inputs (relative error ≤ 2⁻²⁴ each); the backward sums add at most
// Fo·Nk or B·Ni terms, so 1e-5 of the largest magnitude is ample.
func TestConvFloat32(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(15, uint64(d)))
		lx, lk, x, k := convInputs(rng, d, 3, 4, 5, 6, 3)
		ly := device.ConvLayout(lx, lk)
		g := gmtest.Normal(rng, ly.Len())
		x32, k32, g32 := gmtest.To32(x), gmtest.To32(k), gmtest.To32(g)

		y, y32 := make([]float64, ly.Len()), make([]float32, ly.Len())
		Conv(y, x, k, lx, lk)
		Conv(y32, x32, k32, lx, lk)
		gmtest.WantClose(t, fmt.Sprintf("%dD forward", d), y32, y, 1e-5)

		dx, dx32 := make([]float64, len(x)), make([]float32, len(x))
		ConvBackwardData(dx, g, k, lx, lk)
		ConvBackwardData(dx32, g32, k32, lx, lk)
		gmtest.WantClose(t, fmt.Sprintf("%dD data gradient", d), dx32, dx, 1e-5)

		dk, dk32 := make([]float64, len(k)), make([]float32, len(k))
		ConvBackwardKernels(dk, g, x, lx, lk)
		ConvBackwardKernels(dk32, g32, x32, lx, lk)
		gmtest.WantClose(t, fmt.Sprintf("%dD kernel gradient", d), dk32, dk, 1e-5)
	}
}

// TestConvScaleWeights checks that only weights are scaled and that the
// same call on the incoming gradient is the exact backward pass.
func TestConvScaleWeights(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(16, uint64(d)))
		l := mixture.Layout{B: 2, C: 3, N: 4, D: d}
		x := gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), l.B, l.C, l.N, l.D)
		const s = -0.37
		y := make([]float64, len(x))
		ScaleWeights(y, x, l, s)
		for i := range x {
			want := x[i]
			if i%l.Stride() == 0 {
				want *= s
			}
			if y[i] != want {
				t.Fatalf("%dD: value %d is %g, want %g", d, i, y[i], want)
			}
		}
		r := gmtest.Normal(rng, len(x))
		dx := make([]float64, len(x))
		ScaleWeights(dx, r, l, s)
		loss := func() float64 {
			ScaleWeights(y, x, l, s)
			return gmtest.Dot(y, r)
		}
		gmtest.WantGrad(t, fmt.Sprintf("%dD gradient", d), dx, x, loss)
	}
}
