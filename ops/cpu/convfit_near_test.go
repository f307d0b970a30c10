package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// nearScale is the weight factor of the near-group tests (a block's 1/Fi).
const nearScale = 0.5

// nearRun returns ConvFit's output for x and k with its weights times
// nearScale, its layout and its selection.
func nearRun(x, k []float64, lx, lk mixture.Layout, s device.ConvFitSelect) ([]float64, mixture.Layout, *ConvFitSelection) {
	ly := device.ConvFitLayout(lx, lk, s.N)
	f := make([]float64, ly.Len())
	sel := ConvFitSaving(f, x, k, lx, lk, s)
	ScaleWeights(f, f, ly, nearScale)
	return f, ly, sel
}

// centroids returns the positions of the mixtures f (layout l) as points
// [B·C, N, D].
func centroids(f []float64, l mixture.Layout) []float64 {
	p := make([]float64, 0, l.Mixtures()*l.N*l.D)
	for g := range l.Mixtures() * l.N {
		p = append(p, f[g*l.Stride()+1:][:l.D]...)
	}
	return p
}

// TestConvFitNearExact checks that with r = ∞ the corrections turn the fit's
// values at its centroids into the exact convolution's, and that r = 0
// (each node's own components, without the search for near nodes) gives
// what the search gives at a radius too small to reach another node.
func TestConvFitNearExact(t *testing.T) {
	forConvFitCases(41, func(c convFitCase) {
		x, k, lx, lk := c.x, c.k, c.lx, c.lk
		conv := make([]float64, device.ConvLayout(lx, lk).Len())
		Conv(conv, x, k, lx, lk)
		lc := device.ConvLayout(lx, lk)
		ScaleWeights(conv, conv, lc, nearScale)
		for _, s := range c.sel {
			f, ly, sel := nearRun(x, k, lx, lk, s)
			pts := centroids(f, ly)
			exact, coarse := make([]float64, ly.Mixtures()*s.N), make([]float64, ly.Mixtures()*s.N)
			Evaluate(exact, conv, pts, lc, ly.B, ly.C, s.N)
			Evaluate(coarse, f, pts, ly, ly.B, ly.C, s.N)
			corr, own, tiny := make([]float64, len(exact)), make([]float64, len(exact)), make([]float64, len(exact))
			ConvFitNear(own, x, k, f, lx, lk, sel, 0, nearScale)
			ConvFitNear(tiny, x, k, f, lx, lk, sel, 1e-9, nearScale)
			gmtest.WantClose(t, fmt.Sprintf("%s %v: radius 0 against the general path at 1e-9", c.name, s), own, tiny, 1e-14)
			ConvFitNear(corr, x, k, f, lx, lk, sel, math.Inf(1), nearScale)
			for m := range ly.Mixtures() {
				for i := range s.N {
					at := m*s.N + i
					want := exact[at]
					if i >= int(sel.nsel[m]) {
						want = coarse[at] // a padding slot: no correction
					}
					if got := coarse[at] + corr[at]; math.Abs(got-want) > 1e-10*(1+math.Abs(want)) {
						t.Errorf("%s %v: mixture %d slot %d: fit + correction %g, exact convolution %g", c.name, s, m, i, got, want)
					}
				}
			}
			sel.Release()
		}
	})
}

// TestConvFitNearGradient checks ConvFitNearBackward against central
// differences of L = Σ c·g in x, k and f (the selection and the near pairs
// frozen at the unperturbed input), float64, 2D and 3D, for radii that
// take each node's own, some and all nodes.
func TestConvFitNearGradient(t *testing.T) {
	forConvFitCases(43, func(c convFitCase) {
		x, k, lx, lk := c.x, c.k, c.lx, c.lk
		for _, s := range c.sel {
			if s.Negative != device.DefaultConvFitNegative || s.N >= c.nv || s.N > 17 {
				// The selection rule does not enter the corrections, all
				// leaves give none, and the largest fit only costs time.
				continue
			}
			f, ly, sel := nearRun(x, k, lx, lk, s)
			for _, r := range []float64{0, nearRadiusClear(x, k, f, lx, lk, sel, 1), math.Inf(1)} {
				g := gmtest.Normal(c.rng, ly.Mixtures()*s.N)
				for i := 0; i < len(g); i += 3 {
					g[i] = 0 // a centroid the loss does not see (the ReLU fit's t ≤ 0)
				}
				corr := make([]float64, len(g))
				loss := func() float64 {
					ConvFitNear(corr, x, k, f, lx, lk, sel, r, nearScale)
					return gmtest.Dot(corr, g)
				}
				dx, dk, df := make([]float64, len(x)), make([]float64, len(k)), make([]float64, len(f))
				ConvFitNearBackward(dx, dk, df, g, x, k, f, lx, lk, sel, r, nearScale)
				name := fmt.Sprintf("%s %v r %g", c.name, s, r)
				gmtest.WantGrad(t, name+": data gradient", dx, x, loss)
				gmtest.WantGrad(t, name+": kernel gradient", dk, k, loss)
				gmtest.WantGrad(t, name+": fit gradient", df, f, loss)
				// The destinations add, and one alone gives the same values.
				dx2 := slices.Clone(dx)
				ConvFitNearBackward(dx2, nil, nil, g, x, k, f, lx, lk, sel, r, nearScale)
				for i := range dx2 {
					dx2[i] -= dx[i]
				}
				gmtest.WantClose(t, name+": data gradient added by a second call", dx2, dx, 1e-13)
			}
			sel.Release()
		}
	})
}

// TestConvFitNearFloat32 checks the float32 corrections and gradients
// against float64 on the same inputs, at radius 0 (each node's own
// components), 2 and ∞ (the vector kernels of convfit_exact.go where the
// build has them).
func TestConvFitNearFloat32(t *testing.T) { checkConvFitNearFloat32(t, 0, 2, math.Inf(1)) }

// checkConvFitNearFloat32 is TestConvFitNearFloat32 at the radii rs.
func checkConvFitNearFloat32(t *testing.T, rs ...float64) {
	forConvFitCases(47, func(c convFitCase) {
		x, k, lx, lk := c.x, c.k, c.lx, c.lk
		x32, k32 := gmtest.To32(x), gmtest.To32(k)
		for _, s := range c.sel {
			f, ly, sel := nearRun(gmtest.To64(x32), gmtest.To64(k32), lx, lk, s)
			f32 := gmtest.To32(f)
			sel32 := ConvFitSaving(make([]float32, ly.Len()), x32, k32, lx, lk, s)
			g := gmtest.Normal(c.rng, ly.Mixtures()*s.N)
			for _, r := range rs {
				c64, c32 := make([]float64, len(g)), make([]float32, len(g))
				ConvFitNear(c64, gmtest.To64(x32), gmtest.To64(k32), gmtest.To64(f32), lx, lk, sel, r, nearScale)
				ConvFitNear(c32, x32, k32, f32, lx, lk, sel32, r, nearScale)
				name := fmt.Sprintf("%s %v r %g", c.name, s, r)
				gmtest.WantClose(t, name+": corrections", c32, c64, 1e-4)
				dx, dx32 := make([]float64, len(x)), make([]float32, len(x))
				dk, dk32 := make([]float64, len(k)), make([]float32, len(k))
				df, df32 := make([]float64, len(f)), make([]float32, len(f))
				ConvFitNearBackward(dx, dk, df, g, gmtest.To64(x32), gmtest.To64(k32), gmtest.To64(f32), lx, lk, sel, r, nearScale)
				ConvFitNearBackward(dx32, dk32, df32, gmtest.To32(g), x32, k32, f32, lx, lk, sel32, r, nearScale)
				gmtest.WantClose(t, name+": data gradient", dx32, dx, 1e-3)
				gmtest.WantClose(t, name+": kernel gradient", dk32, dk, 1e-3)
				gmtest.WantClose(t, name+": fit gradient", df32, df, 1e-3)
			}
			sel.Release()
			sel32.Release()
		}
	})
}

// nearRadiusClear returns a radius close to r at which no pair of a node
// and a centroid of f is within 1 % of the boundary, so that the finite
// differences do not change which nodes are near.
func nearRadiusClear(x, k, f []float64, lx, lk mixture.Layout, sel *ConvFitSelection, r float64) float64 {
	ly := device.ConvFitLayout(lx, lk, sel.s.N)
	w := newNearWork[float64](lx, lk, sel.s.N)
	var q []float64
	for m := range ly.Mixtures() {
		w.load(x, k, mixture.Mixture(f, ly, m), sel, m, nearScale, nil)
		for i := range w.ns {
			p := w.centroid(i)
			quadRow(w.gq, nil, 0, &p, &w.gmu, &w.gsym, lx.D, 0, w.ns)
			for _, v := range w.gq[:w.ns] {
				q = append(q, -2*v)
			}
		}
	}
	for {
		clear := true
		for _, v := range q {
			if math.Abs(v-r*r) < 0.01*r*r {
				clear = false
			}
		}
		if clear {
			return r
		}
		r *= 1.013
	}
}
