package gmtest

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMixtures checks every field of a large draw against its Spec: weight
// range and sign frequency, position range, symmetric covariances with
// eigenvalues in [CovDiag, CovDiag + CovScale·d²/4], and float32 equal to the
// float64 draw of the same seed rounded.
func TestMixtures(t *testing.T) {
	s := Spec{WeightMin: 0.1, WeightMax: 1.1, NegativeOneIn: 4, Spread: 3, CovScale: 0.3, CovDiag: 0.2}
	for _, d := range []int{2, 3} {
		x := Mixtures[float64](rand.New(rand.NewPCG(1, uint64(d))), s, 4, 5, 100, d)
		x32 := Mixtures[float32](rand.New(rand.NewPCG(1, uint64(d))), s, 4, 5, 100, d)
		st := 1 + d + d*d
		if len(x) != 4*5*100*st {
			t.Fatalf("%dD: %d values, want %d", d, len(x), 4*5*100*st)
		}
		if e := MaxAbsDiff(x32, To32(x)); e != 0 {
			t.Errorf("%dD: float32 draw differs from the rounded float64 draw by %g", d, e)
		}
		var neg int
		for i := 0; i < len(x); i += st {
			g := x[i : i+st]
			if w := math.Abs(g[0]); w < s.WeightMin || w >= s.WeightMax {
				t.Fatalf("%dD: |weight| %g outside [%g, %g)", d, w, s.WeightMin, s.WeightMax)
			}
			if g[0] < 0 {
				neg++
			}
			for _, p := range g[1 : 1+d] {
				if p < -s.Spread || p >= s.Spread {
					t.Fatalf("%dD: position %g outside [−%g, %g)", d, p, s.Spread, s.Spread)
				}
			}
			lo, hi := eigenBounds(t, g[1+d:], d)
			if lo < s.CovDiag*(1-1e-12) || hi > (s.CovDiag+s.CovScale*float64(d*d)/4)*(1+1e-12) {
				t.Fatalf("%dD: covariance %v has eigenvalues in [%g, %g]", d, g[1+d:], lo, hi)
			}
		}
		if f := float64(neg) / float64(len(x)/st); math.Abs(f-0.25) > 0.05 {
			t.Errorf("%dD: %.3f of the weights are negative, want about 1/4", d, f)
		}
	}
}

// eigenBounds fails t unless the d×d matrix m is symmetric and returns its
// smallest and largest eigenvalue (d = 2 in closed form, d = 3 by Cardano).
func eigenBounds(t *testing.T, m []float64, d int) (lo, hi float64) {
	t.Helper()
	for r := range d {
		for c := range d {
			if m[r*d+c] != m[c*d+r] {
				t.Fatalf("matrix %v is not symmetric", m)
			}
		}
	}
	if d == 2 {
		mean, dev := (m[0]+m[3])/2, math.Hypot((m[0]-m[3])/2, m[1])
		return mean - dev, mean + dev
	}
	q := (m[0] + m[4] + m[8]) / 3
	p2 := (m[0]-q)*(m[0]-q) + (m[4]-q)*(m[4]-q) + (m[8]-q)*(m[8]-q) + 2*(m[1]*m[1]+m[2]*m[2]+m[5]*m[5])
	p := math.Sqrt(p2 / 6)
	if p == 0 {
		return q, q
	}
	var b [9]float64
	for i := range b {
		b[i] = m[i] / p
	}
	for i := 0; i < 9; i += 4 {
		b[i] -= q / p
	}
	det := b[0]*(b[4]*b[8]-b[5]*b[7]) - b[1]*(b[3]*b[8]-b[5]*b[6]) + b[2]*(b[3]*b[7]-b[4]*b[6])
	phi := math.Acos(math.Max(-1, math.Min(1, det/2))) / 3
	return q + 2*p*math.Cos(phi+2*math.Pi/3), q + 2*p*math.Cos(phi)
}

func TestUniform(t *testing.T) {
	v := Uniform[float32](rand.New(rand.NewPCG(2, 0)), 1000, -3, 5)
	if lo, hi := minMax(v); lo < -3 || hi >= 5 || lo > -2.9 || hi < 4.9 {
		t.Errorf("1000 values span [%g, %g], want most of [−3, 5)", lo, hi)
	}
}

func TestScales(t *testing.T) {
	v := Scales[float64](rand.New(rand.NewPCG(4, 0)), 3000)
	var neg int
	for _, f := range v {
		if a := math.Abs(f); a < 0.5 || a >= 2 {
			t.Fatalf("factor %g: magnitude outside [0.5, 2)", f)
		}
		if f < 0 {
			neg++
		}
	}
	if f := float64(neg) / 3000; math.Abs(f-1.0/3) > 0.05 {
		t.Errorf("%.3f of the factors are negative, want about 1/3", f)
	}
}

func TestNormal(t *testing.T) {
	v := Normal(rand.New(rand.NewPCG(3, 0)), 4000)
	var mean, sq float64
	for _, x := range v {
		mean += x / 4000
		sq += x * x / 4000
	}
	if math.Abs(mean) > 0.05 || math.Abs(sq-1) > 0.1 {
		t.Errorf("4000 values have mean %.3g and second moment %.3g, want 0 and 1", mean, sq)
	}
}

func minMax(v []float32) (lo, hi float32) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func TestConvert(t *testing.T) {
	x := []float64{1, -0.1, 1e-30, 3e38}
	x32 := To32(x)
	for i, v := range x32 {
		if v != float32(x[i]) {
			t.Errorf("To32(%g) = %g, want %g", x[i], v, float32(x[i]))
		}
	}
	if got := To64(x32); got[1] != float64(float32(-0.1)) || got[0] != 1 {
		t.Errorf("To64(%v) = %v", x32, got)
	}
	if To32(nil) != nil || To32([]float64{}) == nil {
		t.Error("To32 does not keep nil and empty apart")
	}
}

func TestDifferences(t *testing.T) {
	a := []float32{1, 2, -4}
	b := []float64{1, 2.5, -5}
	if got := MaxAbs(b); got != 5 {
		t.Errorf("MaxAbs = %g, want 5", got)
	}
	if got := MaxAbsDiff(a, b); got != 1 {
		t.Errorf("MaxAbsDiff = %g, want 1", got)
	}
	if got := RelErr(a, b); got != 0.2 {
		t.Errorf("RelErr = %g, want 0.2", got)
	}
	if got := RelErr([]float64{0, 0.5}, []float64{0, 0}); got != 0.5 {
		t.Errorf("RelErr against zeros = %g, want the absolute error 0.5", got)
	}
}

// TestCentral checks the central differences of f(x, y) = x²·y + sin y
// against its analytic gradient, and that x is restored.
func TestCentral(t *testing.T) {
	x := []float64{0.7, -1.3}
	f := func() float64 { return x[0]*x[0]*x[1] + math.Sin(x[1]) }
	want := []float64{2 * x[0] * x[1], x[0]*x[0] + math.Cos(x[1])}
	got := Central(f, x, Step)
	if e := RelErr(got, want); e > 1e-9 {
		t.Errorf("Central = %v, want %v (relative error %.3g)", got, want, e)
	}
	if x[0] != 0.7 || x[1] != -1.3 {
		t.Errorf("Central left x at %v", x)
	}
	// At the kink of y·|x| at x = 0 the left difference is the left
	// derivative, −y; off the kink it agrees with the central one.
	x[0] = 0
	kink := func() float64 { return x[1] * math.Abs(x[0]) }
	if got := Left(kink, x, Step); math.Abs(got[0]-1.3) > 1e-9 || math.Abs(got[1]) > 1e-9 {
		t.Errorf("Left of y·|x| at (0, −1.3) = %v, want [1.3 0]", got)
	}
	x[0] = 0.7
	if got := Left(f, x, Step); RelErr(got, want) > 1e-9 {
		t.Errorf("Left = %v, want %v", got, want)
	}
	if x[0] != 0.7 || x[1] != -1.3 {
		t.Errorf("Left left x at %v", x)
	}
	// On exp(8x), curved enough that Central's h² error at a coarse step
	// is 1e-4 relative, Richardson's extrapolation is good to 1e-7.
	x[0] = 0.3
	steep := func() float64 { return math.Exp(8 * x[0]) }
	dsteep := []float64{8 * math.Exp(8*0.3), 0}
	if e := RelErr(Central(steep, x, 1e-2), dsteep); e < 1e-4 {
		t.Errorf("Central of exp(8x) at step 1e-2: relative error %.3g, want the h² error ≥ 1e-4", e)
	}
	if e := RelErr(Richardson(steep, x, 1e-2), dsteep); e > 1e-7 {
		t.Errorf("Richardson of exp(8x) at step 1e-2: relative error %.3g > 1e-7", e)
	}
	if got := Dot([]float64{1, 2, 3}, []float64{4, -5, 6}); got != 12 {
		t.Errorf("Dot = %g, want 12", got)
	}
}

// TestGraphGrad checks a graph of Gorgonia's own ops, y = a⊙b + a, whose
// gradients Gorgonia computes, with respect to both inputs.
func TestGraphGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	in := []*tensor.Dense{
		tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(Normal(rng, 6))),
		tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(Normal(rng, 6))),
	}
	GraphGrad(t, rng, in, func(n []*G.Node) (*G.Node, error) {
		return G.Add(G.Must(G.HadamardProd(n[0], n[1])), n[0])
	}, 0, 1)
}

func TestWantGrad(t *testing.T) {
	x := []float64{0.7, -1.3}
	loss := func() float64 { return x[0] * x[0] * x[1] }
	for _, c := range []struct {
		name   string
		grad   []float64
		failed int
	}{
		{"right", []float64{2 * 0.7 * -1.3, 0.49}, 0},
		{"wrong", []float64{2 * 0.7 * -1.3, 0.5}, 1},
		{"NaN", []float64{math.NaN(), 0.49}, 1},
	} {
		r := &recorder{TB: t}
		WantGrad(r, c.name, c.grad, x, loss)
		if len(r.errors) != c.failed {
			t.Errorf("%s: failures %q, want %d", c.name, r.errors, c.failed)
		}
	}
}

// recorder is a testing.TB that records failures instead of acting on them.
type recorder struct {
	testing.TB
	fatal  bool
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = true
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestWantErr(t *testing.T) {
	err := errors.New(`gm.Conv: input "x" has shape (2, 3)`)
	cases := []struct {
		name   string
		err    error
		want   []string
		fatal  bool
		failed int
	}{
		{"all present", err, []string{"gm.Conv", `"x"`, "(2, 3)"}, false, 0},
		{"one missing", err, []string{"gm.Conv", "(2, 4)"}, false, 1},
		{"nil error", nil, []string{"gm.Conv"}, true, 1},
	}
	for _, c := range cases {
		r := &recorder{TB: t}
		WantErr(r, c.err, c.want...)
		if r.fatal != c.fatal || len(r.errors) != c.failed {
			t.Errorf("%s: fatal %v and failures %q, want fatal %v and %d failures", c.name, r.fatal, r.errors, c.fatal, c.failed)
		}
	}
}

func TestWantClose(t *testing.T) {
	want := []float64{1, -2, 4}
	cases := []struct {
		name   string
		got    []float32
		fatal  bool
		failed int
	}{
		{"within", []float32{1, -2, 4.00001}, false, 0},
		{"outside", []float32{1, -2.01, 4}, false, 1},
		{"NaN", []float32{1, float32(math.NaN()), 4}, false, 1},
		{"short", []float32{1, -2}, true, 1},
	}
	for _, c := range cases {
		r := &recorder{TB: t}
		WantClose(r, c.name, c.got, want, 1e-5)
		if r.fatal != c.fatal || len(r.errors) != c.failed {
			t.Errorf("%s: fatal %v and failures %q, want fatal %v and %d failures", c.name, r.fatal, r.errors, c.fatal, c.failed)
		}
	}
}

// TestOnlyImportedByTests walks the module and fails for every non-test Go
// file that imports this package: its helpers must never reach a program.
func TestOnlyImportedByTests(t *testing.T) {
	const self = "github.com/gmcn-go/gmcn/internal/gmtest"
	root := filepath.Join("..", "..")
	var files int
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self {
				t.Errorf("%s imports %s; only _test.go files may", path, self)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked %d non-test Go files from %s, want the whole module", files, root)
	}
}
