package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// evalCase is one shape of an evaluation test: mixtures [B, C, N, ·] in
// dimension D at point sets [PB, PC, M, D].
type evalCase struct {
	B, C, N, D, PB, PC, M int
}

func (c evalCase) String() string {
	return fmt.Sprintf("%dD_B%d_C%d_N%d_PB%d_PC%d_M%d", c.D, c.B, c.C, c.N, c.PB, c.PC, c.M)
}

func (c evalCase) layout() mixture.Layout { return mixture.Layout{B: c.B, C: c.C, N: c.N, D: c.D} }

// evalCases covers both dimensions and every broadcast variant of the points.
func evalCases() []evalCase {
	var cs []evalCase
	for _, d := range []int{2, 3} {
		for _, pbc := range [][2]int{{1, 1}, {1, 3}, {2, 1}, {2, 3}} {
			cs = append(cs, evalCase{B: 2, C: 3, N: 4, D: d, PB: pbc[0], PC: pbc[1], M: 5})
		}
	}
	return cs
}

// evalInputs returns a mixture batch drawn from gmtest.StandardSpec and
// points in [−3, 3) for case c.
func evalInputs(rng *rand.Rand, c evalCase) (x, pts []float64) {
	x = gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), c.B, c.C, c.N, c.D)
	pts = gmtest.Uniform[float64](rng, c.PB*c.PC*c.M*c.D, -3, 3)
	return x, pts
}

// evalGradients returns ∂L/∂x and ∂L/∂pts from EvaluateBackwardMixture and
// EvaluateBackwardPoints for case c and the incoming gradient g.
func evalGradients[T Float](x, pts, g []T, c evalCase) (dx, dp []T) {
	dx, dp = make([]T, len(x)), make([]T, len(pts))
	EvaluateBackwardMixture(dx, x, pts, g, c.layout(), c.PB, c.PC, c.M)
	EvaluateBackwardPoints(dp, x, pts, g, c.layout(), c.PB, c.PC, c.M)
	return dx, dp
}

// TestEvaluateBackward compares EvaluateBackwardMixture and
// EvaluateBackwardPoints with central differences of L = Σ y·r, r random, for
// every broadcast variant, including the sums over broadcast dimensions.
func TestEvaluateBackward(t *testing.T) {
	grads := []struct {
		name string
		wrt  func(x, pts []float64) []float64
		grad func(d, x, pts, r []float64, l mixture.Layout, c evalCase)
	}{
		{"mixture", func(x, _ []float64) []float64 { return x }, func(d, x, pts, r []float64, l mixture.Layout, c evalCase) {
			EvaluateBackwardMixture(d, x, pts, r, l, c.PB, c.PC, c.M)
		}},
		{"points", func(_, pts []float64) []float64 { return pts }, func(d, x, pts, r []float64, l mixture.Layout, c evalCase) {
			EvaluateBackwardPoints(d, x, pts, r, l, c.PB, c.PC, c.M)
		}},
	}
	for seed, gr := range grads {
		for _, c := range evalCases() {
			t.Run(gr.name+"/"+c.String(), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(11+uint64(seed), uint64(c.D*100+c.PB*10+c.PC)))
				l := c.layout()
				x, pts := evalInputs(rng, c)
				r := gmtest.Normal(rng, c.B*c.C*c.M)
				y := make([]float64, len(r))
				loss := func() float64 {
					Evaluate(y, x, pts, l, c.PB, c.PC, c.M)
					return gmtest.Dot(y, r)
				}
				// Poisoned so a row the kernel forgets to clear fails the check.
				wrt := gr.wrt(x, pts)
				d := make([]float64, len(wrt))
				for i := range d {
					d[i] = math.NaN()
				}
				gr.grad(d, x, pts, r, l, c)
				gmtest.WantGrad(t, "gradient", d, wrt, loss)
			})
		}
	}
}

// TestEvaluateBackwardPointsBlocks checks the row blocking of
// EvaluateBackwardPoints with more rows than one block holds: the result must
// equal the per-point sum computed without blocks.
func TestEvaluateBackwardPointsBlocks(t *testing.T) {
	c := evalCase{B: 2, C: 2, N: 3, D: 2, PB: 1, PC: 1, M: 2*evaluatePointRows + 7}
	rng := rand.New(rand.NewPCG(13, 0))
	l := c.layout()
	x, pts := evalInputs(rng, c)
	g := gmtest.Normal(rng, c.B*c.C*c.M)
	dp := make([]float64, len(pts))
	EvaluateBackwardPoints(dp, x, pts, g, l, c.PB, c.PC, c.M)
	want := make([]float64, len(pts))
	sc := newEvalScratch[float64](1, c.N, 0)[0]
	for mi := range l.Mixtures() {
		mixture.PrepareMixture(c.D, mixture.Mixture(x, l, mi), sc.prep)
		for i := range c.M {
			pointGrad(c.D, &sc, pts[i*c.D:(i+1)*c.D], g[mi*c.M+i], want[i*c.D:(i+1)*c.D])
		}
	}
	if e := gmtest.RelErr(dp, want); e > 1e-12 {
		t.Errorf("blocked result differs from the unblocked sum: relative error %.3g", e)
	}
}

// TestEvaluateFloat32 runs all three kernels in float32 (the SIMD forward
// when built with GOEXPERIMENT=simd) and compares them with float64.
func TestEvaluateFloat32(t *testing.T) {
	cases := append(evalCases(),
		// More components than SIMD lanes, with a remainder, and a point count
		// that is not a multiple of anything.
		evalCase{B: 2, C: 2, N: 37, D: 2, PB: 2, PC: 1, M: 29},
		evalCase{B: 1, C: 3, N: 21, D: 3, PB: 1, PC: 3, M: 70})
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(14, uint64(c.N*1000+c.D*100+c.PB*10+c.PC)))
			l := c.layout()
			x, pts := evalInputs(rng, c)
			g := gmtest.Normal(rng, c.B*c.C*c.M)
			x32, pts32, g32 := gmtest.To32(x), gmtest.To32(pts), gmtest.To32(g)
			check := func(what string, f32 []float32, f64 []float64) {
				t.Helper()
				gmtest.WantClose(t, what+" in float32", f32, f64, 1e-5)
			}
			y := make([]float64, c.B*c.C*c.M)
			y32 := make([]float32, len(y))
			Evaluate(y, x, pts, l, c.PB, c.PC, c.M)
			Evaluate(y32, x32, pts32, l, c.PB, c.PC, c.M)
			check("Evaluate", y32, y)
			evaluateGeneric(y32, x32, pts32, l, c.PB, c.PC, c.M)
			check("evaluateGeneric", y32, y)
			dx, dp := evalGradients(x, pts, g, c)
			dx32, dp32 := evalGradients(x32, pts32, g32, c)
			check("EvaluateBackwardMixture", dx32, dx)
			check("EvaluateBackwardPoints", dp32, dp)
		})
	}
}

// TestEvaluateBackwardFast compares the float32 backward kernels (the SIMD
// ones when built with GOEXPERIMENT=simd on amd64) with the generic code in
// float32.
func TestEvaluateBackwardFast(t *testing.T) { checkEvalBackwardFast(t) }

// checkEvalBackwardFast runs EvaluateBackwardMixture and
// EvaluateBackwardPoints against their generic versions in 2D and 3D, for
// every broadcast of the points, with component and point counts that leave
// partial vectors of 8 and 16 lanes (and point counts below one vector and
// past one block of evaluatePointRows, fewer and more points than
// components), with random and with zero incoming
// gradients. Zero gradients must give exact zeros, written over NaN.
func checkEvalBackwardFast(t *testing.T) {
	for _, d := range []int{2, 3} {
		for _, nm := range [][2]int{{1, 3}, {19, 37}, {8, 16}, {21, 2*evaluatePointRows + 7}, {37, 9}, {40, evaluatePointRows + 3}} {
			for _, pbc := range [][2]int{{1, 1}, {1, 3}, {2, 1}, {2, 3}} {
				c := evalCase{B: 2, C: 3, N: nm[0], D: d, PB: pbc[0], PC: pbc[1], M: nm[1]}
				t.Run(c.String(), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(16, uint64(c.N*1000+c.M*10+c.PB+c.PC)))
					x64, p64 := evalInputs(rng, c)
					g64 := gmtest.Normal(rng, c.B*c.C*c.M)
					x, pts, g := gmtest.To32(x64), gmtest.To32(p64), gmtest.To32(g64)
					l := c.layout()
					check := func(what string, got, want []float32) {
						t.Helper()
						gmtest.WantClose(t, what+" on the fast path", got, want, 1e-5)
					}
					dx, dp := evalGradients(x, pts, g, c)
					dxWant, dpWant := make([]float32, len(x)), make([]float32, len(pts))
					evaluateBackwardMixtureGeneric(dxWant, x, pts, g, l, c.PB, c.PC, c.M)
					evaluateBackwardPointsGeneric(dpWant, x, pts, g, l, c.PB, c.PC, c.M)
					check("EvaluateBackwardMixture", dx, dxWant)
					check("EvaluateBackwardPoints", dp, dpWant)

					clear(g)
					nan := float32(math.NaN())
					for i := range dx {
						dx[i] = nan
					}
					for i := range dp {
						dp[i] = nan
					}
					EvaluateBackwardMixture(dx, x, pts, g, l, c.PB, c.PC, c.M)
					EvaluateBackwardPoints(dp, x, pts, g, l, c.PB, c.PC, c.M)
					for what, v := range map[string][]float32{"EvaluateBackwardMixture": dx, "EvaluateBackwardPoints": dp} {
						for i, vi := range v {
							if vi != 0 {
								t.Errorf("%s with g = 0: [%d] = %v, want 0", what, i, vi)
								break
							}
						}
					}
				})
			}
		}
	}
}

// TestEvaluateFarPoints checks that points far from every component give
// exact zeros, not NaN, on every path (the polynomial exp must underflow
// cleanly).
func TestEvaluateFarPoints(t *testing.T) {
	for _, d := range []int{2, 3} {
		c := evalCase{B: 1, C: 1, N: 19, D: d, PB: 1, PC: 1, M: 3}
		rng := rand.New(rand.NewPCG(15, uint64(d)))
		x, pts := evalInputs(rng, c)
		for i := range pts {
			pts[i] = 1e4 * float64(1-2*(i%2))
		}
		y := make([]float32, c.M)
		Evaluate(y, gmtest.To32(x), gmtest.To32(pts), c.layout(), 1, 1, c.M)
		for i, v := range y {
			if v != 0 {
				t.Errorf("%dD: y[%d] = %v at distance 1e4, want 0", d, i, v)
			}
		}
	}
}
