package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// relufitOwnTargets returns the values of every mixture of x at its own
// centroids, κ excluded: the targets ReLUFit computes when none are given.
func relufitOwnTargets(x []float64, l mixture.Layout) []float64 {
	_, t := relufitNaive(x, nil, l, device.ReLUFitOptions{})
	return t
}

// TestReLUFitTargetsOwn checks that given targets equal to the mixture's own
// values at its centroids reproduce the fit without targets, for every
// variant and kind of constant.
func TestReLUFitTargetsOwn(t *testing.T) {
	for _, v := range relufitVariants {
		for _, kind := range relufitConstants {
			for _, d := range []int{2, 3} {
				rng := rand.New(rand.NewPCG(41, uint64(d)))
				l := mixture.Layout{B: 2, C: 3, N: 19, D: d}
				x, kappa := relufitRandom(rng, l, 0, 2), relufitConstant(rng, kind, l)
				want, got := make([]float64, len(x)), make([]float64, len(x))
				if err := ReLUFit(want, x, kappa, nil, l, v.opts); err != nil {
					t.Fatal(err)
				}
				if err := ReLUFit(got, x, kappa, relufitOwnTargets(x, l), l, v.opts); err != nil {
					t.Fatal(err)
				}
				gmtest.WantClose(t, fmt.Sprintf("%s κ %s D=%d", v.name, kind, d), got, want, 1e-12)
			}
		}
	}
}

// relufitTargetDecisions lists the discrete decisions of the fit to given
// targets tg: the signs of t_k + κ, a_j + κ, a_j and κ.
func relufitTargetDecisions(x, kappa, tg []float64, l mixture.Layout) []bool {
	var dec []bool
	for m := range l.Mixtures() {
		k := relufitKappa(kappa, m)
		dec = append(dec, k > 0)
		for j := range l.N {
			a := x[(m*l.N+j)*l.Stride()]
			dec = append(dec, tg[m*l.N+j]+k > 0, a+k > 0, a > 0)
		}
	}
	return dec
}

// TestReLUFitTargetsGradient checks ∂L/∂x, ∂L/∂κ and ∂L/∂t of
// L = Σ r·ReLUFit(x, κ, t) against central differences for every variant and
// kind of constant in 2D and 3D, with every decision
// (relufitTargetDecisions) frozen over the steps the differences take: the
// targets are drawn at least 0.05 away from −κ, and the weights from 0 and
// −κ.
func TestReLUFitTargetsGradient(t *testing.T) {
	for _, v := range relufitVariants {
		for _, kind := range relufitConstants {
			for _, d := range []int{2, 3} {
				for _, n := range []int{1, 7} {
					l := mixture.Layout{B: 2, C: 2, N: n, D: d}
					x, kappa := relufitGradCase(t, uint64(10+n), l, v.opts, kind)
					rng := rand.New(rand.NewPCG(uint64(n), uint64(d)))
					tg := make([]float64, l.Mixtures()*n)
					for i := range tg {
						tg[i] = -relufitKappa(kappa, i/n) + math.Copysign(0.05+rng.Float64(), rng.NormFloat64())
					}
					relufitCheckGrad(t, fmt.Sprintf("%s κ %s D=%d N=%d", v.name, kind, d, n), x, kappa, tg, l, v.opts)
				}
			}
		}
	}
}

// TestReLUFitTargetsSaved checks that the backward pass reading the saved
// sums gives the gradients of the one that recomputes them, bit for bit,
// and that float32 (the vectorised loops where the CPU has them) agrees
// with float64.
func TestReLUFitTargetsSaved(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(43, uint64(d)))
		l := mixture.Layout{B: 2, C: 2, N: 37, D: d}
		x, g := relufitRandom(rng, l, 0, 2), relufitRandom(rng, l, 0, 1)
		kappa := relufitConstant(rng, "mixed", l)
		tg := gmtest.Normal(rng, l.Mixtures()*l.N)
		y := make([]float64, len(x))
		sums, err := ReLUFitSaving(y, x, kappa, tg, l, device.ReLUFitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		grads := func(sums *ReLUFitSums[float64]) [3][]float64 {
			out := [3][]float64{make([]float64, len(x)), make([]float64, len(kappa)), make([]float64, len(tg))}
			if err := ReLUFitBackwardSaved(out[0], out[1], out[2], x, kappa, tg, g, l, device.ReLUFitOptions{}, sums); err != nil {
				t.Fatal(err)
			}
			return out
		}
		saved, fresh := grads(sums), grads(nil)
		for i := range saved {
			if !slices.Equal(saved[i], fresh[i]) {
				t.Errorf("D=%d: gradient %d from the saved sums differs from the recomputed one", d, i)
			}
		}
		y32, dx32, dk32, dt32 := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(kappa)), make([]float32, len(tg))
		x32, kappa32, tg32, g32 := gmtest.To32(x), gmtest.To32(kappa), gmtest.To32(tg), gmtest.To32(g)
		if err := ReLUFit(y32, x32, kappa32, tg32, l, device.ReLUFitOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := ReLUFitBackward(dx32, dk32, dt32, x32, kappa32, tg32, g32, l, device.ReLUFitOptions{}); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("D=%d float32", d)
		gmtest.WantClose(t, name+" forward", y32, y, 1e-5)
		gmtest.WantClose(t, name+" ∂L/∂x", dx32, fresh[0], 1e-4)
		gmtest.WantClose(t, name+" ∂L/∂κ", dk32, fresh[1], 1e-4)
		gmtest.WantClose(t, name+" ∂L/∂t", dt32, fresh[2], 1e-4)
	}
}

// TestReLUFitTargetsErrors checks that the refined fit and targets of the
// wrong length are reported, not used.
func TestReLUFitTargetsErrors(t *testing.T) {
	l := mixture.Layout{B: 1, C: 2, N: 3, D: 2}
	x := relufitRandom(rand.New(rand.NewPCG(1, 2)), l, 0.2, 1)
	y := make([]float64, len(x))
	for _, c := range []struct {
		name string
		tg   []float64
		opts device.ReLUFitOptions
		want string
	}{
		{"refined", make([]float64, 6), device.ReLUFitOptions{Refine: true}, "cannot take given targets"},
		{"short", make([]float64, 5), device.ReLUFitOptions{}, "5 values for 6 components"},
	} {
		for i, err := range []error{
			ReLUFit(y, x, nil, c.tg, l, c.opts),
			ReLUFitBackward(y, nil, make([]float64, len(c.tg)), x, nil, c.tg, x, l, c.opts),
		} {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (%d): error %v, want one containing %q", c.name, i, err, c.want)
			}
		}
	}
}
