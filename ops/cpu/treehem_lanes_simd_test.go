//go:build goexperiment.simd && amd64

package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// TestHEMLanesMatchEMFit runs batches of EM fits through hemLanes and each
// fit through the scalar emFit: the initial components must be the same,
// and so must the KL masks on these inputs (the lanes round the quadratic
// form of the divergence differently, so a divergence within an ulp of the
// threshold could flip); with the scalar decisions replayed, the fitted
// components and every target gradient must agree to float32 rounding.
// The batches have fewer lanes than hemLanesN and targets per lane from
// k+1 to 2k, so padding is exercised; weights are positive or of both signs;
// lane 0's positions are on a grid, so that distances tie.
func TestHEMLanesMatchEMFit(t *testing.T) {
	if !hemLanesOK {
		t.Skip("no AVX-512")
	}
	for _, d := range []int{2, 3} {
		for _, k := range []int{2, 3, 4, hemMaxT} {
			for _, wlo := range []float64{0.1, -0.5} {
				t.Run(fmt.Sprintf("%dD_k%d_w%g", d, k, wlo), func(t *testing.T) {
					checkHEMLanes(t, d, k, wlo)
				})
			}
		}
	}
}

func checkHEMLanes(t *testing.T, d, k int, wlo float64) {
	rng := rand.New(rand.NewPCG(uint64(d*100+k), uint64(wlo*10+10)))
	const n = hemLanesN - 3
	s := 1 + d + d*d
	targets := make([][]float32, n) // packed targets of each lane
	for j := range targets {
		mj := k + 1 + rng.IntN(k)
		l := mixture.Layout{B: 1, C: 1, N: mj, D: d}
		targets[j] = gmtest.To32(treehemMixtureIn(rng, l, wlo, 0.7))
	}
	// Lane 0 on the corners of a unit cube: equal distances test the
	// tie-break of initial.
	for i := 0; i < len(targets[0]); i += s {
		for c := range d {
			targets[0][i+1+c] = float32(i / s >> c & 1)
		}
	}
	gout := gmtest.To32(treehemMixtureIn(rng, mixture.Layout{B: 1, C: n, N: k, D: d}, -0.5, 1))

	e := newHEMLanes()
	stage := func(decs []emDecision) {
		e.start(d, k)
		e.n = n
		for j, x := range targets {
			mj := len(x) / s
			e.m = max(e.m, mj)
			e.mj[j] = int32(mj)
			for i := range mj {
				laneSetTarget(e, j, i, x[i*s:(i+1)*s])
			}
			if decs != nil {
				e.setMask(j, decs[j].mask)
				e.setInit(j, decs[j].init)
			}
		}
		for j, x := range targets {
			e.padLane(j, len(x)/s)
		}
	}

	// Record in lanes and in the scalar fit.
	stage(nil)
	e.fit(true)
	e.covariances()
	decs := make([]emDecision, n)
	var em emFit[float32]
	em.d = d
	var maxOut, diffOut float64
	for j, x := range targets {
		mj := len(x) / s
		decs[j] = emDecision{init: make([]uint8, k), mask: make([]uint16, mj)}
		em.m, em.k = mj, k
		for i := range mj {
			em.setTarget(i, x[i*s:(i+1)*s])
		}
		em.fit(decs[j], true)
		init, mask := make([]uint8, k), make([]uint16, mj)
		e.getInit(j, init)
		e.getMask(j, mask)
		if !slices.Equal(init, decs[j].init) {
			t.Errorf("lane %d: initial components %v, scalar %v", j, init, decs[j].init)
		}
		if !slices.Equal(mask, decs[j].mask) {
			t.Errorf("lane %d: KL masks %b, scalar %b", j, mask, decs[j].mask)
		}
	}

	// Replay the scalar decisions: forward and backward.
	stage(decs)
	e.fit(false)
	e.covariances()
	for j := range targets {
		for c := range k {
			laneSetOutputGrad(e, j, c, gout[(j*k+c)*s:(j*k+c+1)*s])
		}
	}
	e.backward()
	var maxGrad, diffGrad float64
	for j, x := range targets {
		mj := len(x) / s
		em.m, em.k = mj, k
		for i := range mj {
			em.setTarget(i, x[i*s:(i+1)*s])
		}
		em.fit(decs[j], false)
		em.covariances()
		got, want := make([]float32, s), make([]float32, s)
		for c := range k {
			laneOutput(e, j, c, got)
			em.output(c, want)
			for v := range want {
				maxOut = math.Max(maxOut, math.Abs(float64(want[v])))
				diffOut = math.Max(diffOut, math.Abs(float64(got[v]-want[v])))
			}
			em.setOutputGrad(c, gout[(j*k+c)*s:(j*k+c+1)*s])
		}
		em.backward(decs[j])
		for i := range mj {
			clear(got)
			clear(want)
			laneAddTargetGrad(e, j, i, got)
			em.addTargetGrad(i, want)
			for v := range want {
				maxGrad = math.Max(maxGrad, math.Abs(float64(want[v])))
				diffGrad = math.Max(diffGrad, math.Abs(float64(got[v]-want[v])))
			}
		}
	}
	if diffOut > 1e-5*maxOut {
		t.Errorf("fitted components differ by %.3g (scale %.3g)", diffOut, maxOut)
	}
	if diffGrad > 1e-4*maxGrad {
		t.Errorf("target gradients differ by %.3g (scale %.3g)", diffGrad, maxGrad)
	}
}

// TestLog16 checks that log16 rounds exactly as log32, over normal and
// subnormal arguments, and gives math.Log's special values.
func TestLog16(t *testing.T) {
	if !hemLanesOK {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var xs []float32
	for range 4096 {
		xs = append(xs, math.Float32frombits(rng.Uint32()&0x7FFFFFFF))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, math.SmallestNonzeroFloat32, 1, math.Sqrt2, 0.70710677)
	for len(xs)%hemLanesN != 0 {
		xs = append(xs, 2)
	}
	for b := 0; b < len(xs); b += hemLanesN {
		var in, out hemLane
		copy(in[:], xs[b:])
		for _, n := range []int{hemLanesN, 5} {
			log16(lane16(&in), n).Store(&out)
			for j, x := range in[:n] {
				want := log32(x)
				if math.Float32bits(out[j]) != math.Float32bits(want) && !(want != want && out[j] != out[j]) {
					t.Fatalf("log16(%g) = %g, log32 %g", x, out[j], want)
				}
			}
		}
	}
}

// TestTreeHEMLanes compares the float32 reduction with the lanes against
// the scalar EM step: outputs and gradients agree to float32 rounding, for
// spread and for overlapping components (several KL mask bits) and T = 2
// and 4. Weights are positive: TreeHEM clips a fit's total weight at 1e−13
// from below, which makes its result non-finite for mixtures whose weights
// do not sum to a positive value, with or without lanes; the kernel test
// above covers weights of both signs.
func TestTreeHEMLanes(t *testing.T) {
	if !hemLanesOK {
		t.Skip("no AVX-512")
	}
	for _, d := range []int{2, 3} {
		for _, tt := range []int{2, 4} {
			for _, r := range []float64{3, 1} {
				l := mixture.Layout{B: 2, C: 2, N: 300, D: d}
				x := gmtest.To32(treehemMixtureIn(rand.New(rand.NewPCG(23, uint64(d*tt))), l, 0.1, r))
				o := device.TreeHEMOptions{Reduction: tt}
				np := 12
				y, yLanes := make([]float32, l.Mixtures()*np*l.Stride()), make([]float32, l.Mixtures()*np*l.Stride())
				g := gmtest.To32(treehemMixtureIn(rand.New(rand.NewPCG(29, 1)), mixture.Layout{B: 2, C: 2, N: np, D: d}, -0.5, 1))
				dx, dxLanes := make([]float32, len(x)), make([]float32, len(x))
				run := func(y, dx []float32) {
					if err := TreeHEM(y, x, l, np, o); err != nil {
						t.Fatal(err)
					}
					if err := TreeHEMBackward(dx, x, g, l, np, o); err != nil {
						t.Fatal(err)
					}
				}
				run(yLanes, dxLanes)
				hemLanesOK = false
				run(y, dx)
				hemLanesOK = true
				name := fmt.Sprintf("%dD T=%d r=%g", d, tt, r)
				gmtest.WantClose(t, name+" output", yLanes, gmtest.To64(y), 1e-5)
				gmtest.WantClose(t, name+" gradient", dxLanes, dx, 1e-4)
			}
		}
	}
}
