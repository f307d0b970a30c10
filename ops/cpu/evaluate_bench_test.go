package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// evalBench is one benchmark size: mixtures [B, C, N, ·] in D dimensions at
// M points, one point set shared by all mixtures or (Own) one per mixture made
// of its own centroids, as the dense ReLU fit evaluates them.
type evalBench struct {
	D, B, C, N, M int
	// Own evaluates every mixture at its own component means (M = N);
	// PerMixture at its own M random points.
	Own, PerMixture bool
}

func (c evalBench) name() string {
	n := fmt.Sprintf("%dD_B%d_C%d_N%d_M%d", c.D, c.B, c.C, c.N, c.M)
	if c.PerMixture {
		n += "_each"
	}
	return n
}

// inputs returns float32 mixtures, points with their pb, pc, and a random
// incoming gradient [B, C, M].
func (c evalBench) inputs() (x, pts, g []float32, pb, pc int) {
	rng := rand.New(rand.NewPCG(31, uint64(c.D)))
	ec := evalCase{B: c.B, C: c.C, N: c.N, D: c.D, PB: 1, PC: 1, M: c.M}
	if c.PerMixture {
		ec.PB, ec.PC = c.B, c.C
	}
	x64, p64 := evalInputs(rng, ec)
	pb, pc = ec.PB, ec.PC
	if c.Own {
		pb, pc = c.B, c.C
		s := ec.layout().Stride()
		p64 = make([]float64, 0, c.B*c.C*c.N*c.D)
		for i := 0; i < len(x64); i += s {
			p64 = append(p64, x64[i+1:i+1+c.D]...)
		}
	}
	g64 := gmtest.Normal(rng, c.B*c.C*c.M)
	return gmtest.To32(x64), gmtest.To32(p64), gmtest.To32(g64), pb, pc
}

// run times f with b.Loop and reports Gaussian evaluations (one component
// at one point) per wall second and per CPU second; the second is what one
// core delivers whatever else the machine runs.
func (c evalBench) run(b *testing.B, f func()) {
	cpu0, ok := evalCPUTime()
	for b.Loop() {
		f()
	}
	n := float64(c.B*c.C*c.N*c.M) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds()/1e9, "Geval/s")
	if cpu1, _ := evalCPUTime(); ok && cpu1 > cpu0 {
		b.ReportMetric(n/(cpu1-cpu0)/1e9, "Geval/cpu-s")
	}
}

var evalBenchSmall = []evalBench{
	{D: 2, B: 21, C: 8, N: 32, M: 1000},
	{D: 3, B: 21, C: 8, N: 32, M: 1000},
}

// evalBenchTargets are the shapes of a fused block's exact targets: a
// convolution of 1,280 Gaussians evaluated at 128 centroids of its own.
var evalBenchTargets = []evalBench{
	{D: 2, B: 8, C: 32, N: 1280, M: 128, PerMixture: true},
	{D: 3, B: 4, C: 32, N: 1280, M: 128, PerMixture: true},
}

// evalBenchAll are the small and the targets' shapes.
var evalBenchAll = append(slices.Clip(evalBenchSmall), evalBenchTargets...)

// benchEvaluate runs one benchmark per case of the kernel call that call
// returns for the case's inputs (see evalBench.inputs), over layout l.
func benchEvaluate(b *testing.B, cases []evalBench, call func(c evalBench, l mixture.Layout, x, pts, g []float32, pb, pc int) func()) {
	for _, c := range cases {
		x, pts, g, pb, pc := c.inputs()
		f := call(c, evalCase{B: c.B, C: c.C, N: c.N, D: c.D}.layout(), x, pts, g, pb, pc)
		b.Run(c.name(), func(b *testing.B) { c.run(b, f) })
	}
}

func BenchmarkEvaluateForward(b *testing.B) {
	cases := append(slices.Clip(evalBenchAll), evalBench{D: 2, B: 21, C: 16, N: 2560, M: 2560, Own: true})
	benchEvaluate(b, cases, func(c evalBench, l mixture.Layout, x, pts, _ []float32, pb, pc int) func() {
		y := make([]float32, c.B*c.C*c.M)
		return func() { Evaluate(y, x, pts, l, pb, pc, c.M) }
	})
}

func BenchmarkEvaluateBackwardMixture(b *testing.B) { benchBackwardMixture(b, evalBenchAll) }

func BenchmarkEvaluateBackwardPoints(b *testing.B) {
	benchEvaluate(b, evalBenchAll, func(c evalBench, l mixture.Layout, x, pts, g []float32, pb, pc int) func() {
		dp := make([]float32, len(pts))
		return func() { EvaluateBackwardPoints(dp, x, pts, g, l, pb, pc, c.M) }
	})
}

// benchBackwardMixture benchmarks EvaluateBackwardMixture on cases.
func benchBackwardMixture(b *testing.B, cases []evalBench) {
	benchEvaluate(b, cases, func(c evalBench, l mixture.Layout, x, pts, g []float32, pb, pc int) func() {
		dx := make([]float32, len(x))
		return func() { EvaluateBackwardMixture(dx, x, pts, g, l, pb, pc, c.M) }
	})
}
