package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// evalBroadcasts are the point-set sizes (pb, pc) tested against mixtures
// with B = 2, C = 3: shared by all, per channel, per batch entry, per mixture.
var evalBroadcasts = [][2]int{{1, 1}, {1, 3}, {2, 1}, {2, 3}}

// evalPoints returns float64 points [pb, pc, m, d] in [−3, 3).
func evalPoints(rng *rand.Rand, pb, pc, m, d int) *tensor.Dense {
	return tensor.New(tensor.WithShape(pb, pc, m, d), tensor.WithBacking(gmtest.Uniform[float64](rng, pb*pc*m*d, -3, 3)))
}

// forEvalBroadcasts runs f as a subtest for D = 2, 3 and every point-set
// size of evalBroadcasts, with a generator seeded from seed and the case.
func forEvalBroadcasts(t *testing.T, seed uint64, f func(t *testing.T, rng *rand.Rand, d int, bc [2]int)) {
	for _, d := range []int{2, 3} {
		for _, bc := range evalBroadcasts {
			t.Run(fmt.Sprintf("%dD_pb%d_pc%d", d, bc[0], bc[1]), func(t *testing.T) {
				f(t, rand.New(rand.NewPCG(seed, uint64(d*100+bc[0]*10+bc[1]))), d, bc)
			})
		}
	}
}

// evalDirect evaluates the mixtures at the points straight from the
// definition, sharing no code with the kernels: Σ = L·Lᵀ by Cholesky,
// (p−μ)ᵀ Σ⁻¹ (p−μ) = |L⁻¹(p−μ)|² and det Σ = Π L_jj².
func evalDirect(x, pts []float64, l mixture.Layout, pb, pc, m int) []float64 {
	d, s := l.D, l.Stride()
	y := make([]float64, l.B*l.C*m)
	for b := range l.B {
		for c := range l.C {
			set := (b%pb)*pc + c%pc
			for i := range m {
				p := pts[(set*m+i)*d:]
				var sum float64
				for k := range l.N {
					g := x[l.Offset(b, c, k):][:s]
					var lo [3][3]float64
					for r := range d {
						for cc := 0; cc <= r; cc++ {
							v := g[1+d+r*d+cc]
							for j := range cc {
								v -= lo[r][j] * lo[cc][j]
							}
							if r == cc {
								lo[r][r] = math.Sqrt(v)
							} else {
								lo[r][cc] = v / lo[cc][cc]
							}
						}
					}
					var z [3]float64
					q, det := 0.0, 1.0
					for r := range d {
						v := p[r] - g[1+r]
						for j := range r {
							v -= lo[r][j] * z[j]
						}
						z[r] = v / lo[r][r]
						q += z[r] * z[r]
						det *= lo[r][r] * lo[r][r]
					}
					sum += g[0] * math.Exp(-q/2) / math.Sqrt(math.Pow(2*math.Pi, float64(d))*det)
				}
				y[(b*l.C+c)*m+i] = sum
			}
		}
	}
	return y
}

func TestEvaluateDirect(t *testing.T) {
	forEvalBroadcasts(t, 21, func(t *testing.T, rng *rand.Rand, d int, bc [2]int) {
		x := randomMixture(rng, 2, 3, 6, d)
		p := evalPoints(rng, bc[0], bc[1], 7, d)
		y, err := NewEvaluate(testDev).Do(x, p)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := mixture.LayoutOf(x.Shape())
		want := evalDirect(x.Data().([]float64), p.Data().([]float64), l, bc[0], bc[1], 7)
		if !y.Shape().Eq(tensor.Shape{2, 3, 7}) {
			t.Fatalf("output shape %v, want [2 3 7]", y.Shape())
		}
		if e := gmtest.RelErr(y.Data().([]float64), want); e > 1e-12 {
			t.Errorf("differs from the direct formula by %.3g relative\ngot  %v\nwant %v", e, y.Data(), want)
		}
	})
}

func TestEvaluateGrad(t *testing.T) {
	forEvalBroadcasts(t, 22, func(t *testing.T, rng *rand.Rand, d int, bc [2]int) {
		x := randomMixture(rng, 2, 3, 3, d)
		p := evalPoints(rng, bc[0], bc[1], 4, d)
		checkGraphGrad(t, rng, []*tensor.Dense{x, p}, func(in []*G.Node) (*G.Node, error) {
			return G.ApplyOp(NewEvaluate(testDev), in[0], in[1])
		}, 0, 1)
	})
}

// TestEvaluateFloat32 runs the forward and both grad ops in float32 and
// compares them with float64.
func TestEvaluateFloat32(t *testing.T) {
	forEvalBroadcasts(t, 23, func(t *testing.T, rng *rand.Rand, d int, bc [2]int) {
		x, p := randomMixture(rng, 2, 3, 11, d), evalPoints(rng, bc[0], bc[1], 9, d)
		gr := tensor.New(tensor.WithShape(2, 3, 9), tensor.WithBacking(evalPoints(rng, 2, 3, 9, 1).Data()))
		x32, p32, gr32 := as32(x), as32(p), as32(gr)
		compare := func(o G.Op, in64, in32 []G.Value) G.Value {
			t.Helper()
			a, err := o.Do(in64...)
			if err != nil {
				t.Fatal(err)
			}
			b, err := o.Do(in32...)
			if err != nil {
				t.Fatal(err)
			}
			gmtest.WantClose(t, fmt.Sprintf("%v in float32", o), float64s(b), a.Data().([]float64), 1e-5)
			return b
		}
		y32 := compare(NewEvaluate(testDev), []G.Value{x, p}, []G.Value{x32, p32})
		y64, err := NewEvaluate(testDev).Do(x, p)
		if err != nil {
			t.Fatal(err)
		}
		for wrt := range 2 {
			compare(gradOf(NewEvaluate(testDev), wrt), []G.Value{x, p, y64, gr}, []G.Value{x32, p32, y32, gr32})
		}
	})
}

// TestEvaluateGraphShape checks that the output node has shape [B, C, M]
// for every broadcast variant.
func TestEvaluateGraphShape(t *testing.T) {
	for _, bc := range evalBroadcasts {
		g := G.NewGraph()
		x := G.NewTensor(g, tensor.Float32, 4, G.WithShape(2, 3, 5, 7), G.WithName("x"))
		p := G.NewTensor(g, tensor.Float32, 4, G.WithShape(bc[0], bc[1], 11, 2), G.WithName("p"))
		y, err := G.ApplyOp(NewEvaluate(testDev), x, p)
		if err != nil {
			t.Fatalf("pb=%d pc=%d: %v", bc[0], bc[1], err)
		}
		if !y.Shape().Eq(tensor.Shape{2, 3, 11}) {
			t.Errorf("pb=%d pc=%d: shape %v, want [2 3 11]", bc[0], bc[1], y.Shape())
		}
	}
}

func TestEvaluateBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 0))
	good := func() (*tensor.Dense, *tensor.Dense) {
		return randomMixture(rng, 2, 3, 4, 2), evalPoints(rng, 1, 3, 5, 2)
	}
	grad := func() *tensor.Dense { return tensor.New(tensor.WithShape(2, 3, 5), tensor.Of(tensor.Float64)) }
	// badMixture and badPoints return the inputs of the forward op with the
	// one input made by bad and the other one good; zeros and points make
	// a zero tensor and random points.
	badMixture := func(bad func() *tensor.Dense) func() []G.Value {
		return func() []G.Value {
			_, p := good()
			return []G.Value{bad(), p}
		}
	}
	badPoints := func(bad func() *tensor.Dense) func() []G.Value {
		return func() []G.Value {
			x, _ := good()
			return []G.Value{x, bad()}
		}
	}
	zeros := func(shape ...int) func() *tensor.Dense {
		return func() *tensor.Dense { return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64)) }
	}
	points := func(pb, pc, m, d int) func() *tensor.Dense {
		return func() *tensor.Dense { return evalPoints(rng, pb, pc, m, d) }
	}
	type tc struct {
		name string
		// in returns the inputs of op.
		in   func() []G.Value
		op   G.Op
		want []string // substrings the error must contain
	}
	cases := []tc{
		{"mixture rank 3", badMixture(zeros(2, 3, 7)), NewEvaluate(testDev), []string{"gm.Evaluate", `"mixture"`, "rank 4", "(2, 3, 7)"}},
		{"points rank 3", badPoints(zeros(3, 5, 2)), NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "rank 4", "(3, 5, 2)"}},
		{"packed length 8", badMixture(zeros(2, 3, 4, 8)), NewEvaluate(testDev), []string{"gm.Evaluate", `"mixture"`, "8", "7 (2D)", "13 (3D)"}},
		{"D mismatch", badPoints(points(1, 3, 5, 3)), NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "must have 2 coordinates", "got 3"}},
		{"pb not 1 or B", badPoints(points(3, 3, 5, 2)), NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "batch size must be 1 or", "2, got 3"}},
		{"pc not 1 or C", badPoints(points(2, 2, 5, 2)), NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "channel size must be 1 or", "3, got 2"}},
		{"no points", badPoints(zeros(1, 1, 0, 2)), NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "M = 0"}},
		{"zero components", badMixture(zeros(2, 3, 0, 7)), NewEvaluate(testDev), []string{"gm.Evaluate", `"mixture"`, "N = 0"}},
		{"NaN in points", func() []G.Value {
			x, p := good()
			p.Data().([]float64)[4] = math.NaN()
			return []G.Value{x, p}
		}, NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "NaN", "index 4"}},
		{"Inf in mixture", func() []G.Value {
			x, p := good()
			x.Data().([]float64)[8] = math.Inf(1)
			return []G.Value{x, p}
		}, NewEvaluate(testDev), []string{"gm.Evaluate", `"mixture"`, "+Inf", "n=1"}},
		{"non-SPD covariance", func() []G.Value {
			x, p := good()
			s := mixture.PackedLen(2)
			cov := x.Data().([]float64)[2*s+3 : 3*s]
			copy(cov, []float64{1, 2, 2, 1})
			return []G.Value{x, p}
		}, NewEvaluate(testDev), []string{"gm.Evaluate", `"mixture"`, "not positive definite", "n=2"}},
		{"float32 mixture, float64 points", func() []G.Value {
			x, p := good()
			return []G.Value{as32(x), p}
		}, NewEvaluate(testDev), []string{"gm.Evaluate", `"points"`, "float64", "float32"}},
		{"grad op: grad shape", func() []G.Value {
			x, p := good()
			return []G.Value{x, p, grad(), tensor.New(tensor.WithShape(2, 3, 4), tensor.Of(tensor.Float64))}
		}, gradOf(NewEvaluate(testDev), 0), []string{"gm.EvaluateGradMixture", `"grad"`, "(2, 3, 5)", "(2, 3, 4)"}},
		{"grad op: NaN in grad", func() []G.Value {
			x, p := good()
			g := grad()
			g.Data().([]float64)[3] = math.NaN()
			return []G.Value{x, p, grad(), g}
		}, gradOf(NewEvaluate(testDev), 1), []string{"gm.EvaluateGradPoints", `"grad"`, "NaN"}},
		{"grad op: non-SPD mixture", func() []G.Value {
			x, p := good()
			x.Data().([]float64)[3] = -1
			return []G.Value{x, p, grad(), grad()}
		}, gradOf(NewEvaluate(testDev), 1), []string{"gm.EvaluateGradPoints", `"mixture"`, "not positive definite"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.op.Do(c.in()...)
			gmtest.WantErr(t, err, c.want...)
		})
	}
}

// TestEvaluateBadGraph checks that graph construction rejects bad shapes in
// InferShape and mixed float types in the type system.
func TestEvaluateBadGraph(t *testing.T) {
	cases := []struct {
		name     string
		dtX, dtP tensor.Dtype
		x, p     tensor.Shape
		want     []string
	}{
		{"D mismatch", tensor.Float64, tensor.Float64, tensor.Shape{2, 3, 4, 13}, tensor.Shape{2, 3, 5, 2},
			[]string{"gm.Evaluate", `"points"`, "must have 3 coordinates", "got 2"}},
		{"pb not 1 or B", tensor.Float64, tensor.Float64, tensor.Shape{2, 3, 4, 7}, tensor.Shape{4, 1, 5, 2},
			[]string{"gm.Evaluate", `"points"`, "batch size", "got 4"}},
		{"mixed float types", tensor.Float32, tensor.Float64, tensor.Shape{2, 3, 4, 7}, tensor.Shape{2, 3, 5, 2},
			[]string{"float32", "float64"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := G.NewGraph()
			x := G.NewTensor(g, c.dtX, 4, G.WithShape(c.x...), G.WithName("x"))
			p := G.NewTensor(g, c.dtP, 4, G.WithShape(c.p...), G.WithName("p"))
			_, err := G.ApplyOp(NewEvaluate(testDev), x, p)
			gmtest.WantErr(t, err, c.want...)
		})
	}
}
