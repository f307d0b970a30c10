package mixture

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
)

// TestFitErrorPoints checks that the sample points fill the documented box
// (positions of the weighted components ± 3σ of the widest) and are
// reproducible from the seed.
func TestFitErrorPoints(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(50, uint64(d)))
		l := Layout{B: 2, C: 2, N: 6, D: d}
		x := gmtest.Mixtures[float64](rng, gmtest.ScaledSpec(3, 1, 1, false), l.B, l.C, l.N, l.D)
		// A zero-weight component far away must not stretch the box.
		x[l.Offset(0, 0, 5)] = 0
		x[l.Offset(0, 0, 5)+1] = 100
		const s = 4000
		pts := make([]float64, l.Mixtures()*s*d)
		FitErrorPoints(pts, x, l, s, 9)
		again := make([]float64, len(pts))
		FitErrorPoints(again, x, l, s, 9)
		other := make([]float64, len(pts))
		FitErrorPoints(other, x, l, s, 10)
		if gmtest.MaxAbsDiff(again, pts) != 0 {
			t.Errorf("%dD: same seed, different points", d)
		}
		if gmtest.MaxAbsDiff(other, pts) == 0 {
			t.Errorf("%dD: different seeds, same points", d)
		}
		st := l.Stride()
		for m := range l.Mixtures() {
			mx := Mixture(x, l, m)
			for j := range d {
				lo, hi, sd := math.Inf(1), math.Inf(-1), 0.0
				for k := 0; k < len(mx); k += st {
					if mx[k] == 0 {
						continue
					}
					lo, hi = math.Min(lo, mx[k+1+j]), math.Max(hi, mx[k+1+j])
					sd = math.Max(sd, math.Sqrt(mx[k+1+d+j*(d+1)]))
				}
				lo, hi = lo-3*sd, hi+3*sd
				plo, phi := math.Inf(1), math.Inf(-1)
				for i := range s {
					v := pts[(m*s+i)*d+j]
					plo, phi = math.Min(plo, v), math.Max(phi, v)
				}
				// 4000 uniform points come within 0.5 % of the width of each edge
				// with probability 1 − e^(−20).
				if tol := 0.005 * (hi - lo); plo < lo || phi > hi || plo > lo+tol || phi < hi-tol {
					t.Errorf("%dD mixture %d axis %d: points span [%.4g, %.4g], box [%.4g, %.4g]", d, m, j, plo, phi, lo, hi)
				}
			}
		}
	}
}

// TestFitErrorsOf compares the three measurements with a direct evaluation
// through Prepare/EvalMixture at the same points, and checks the
// measurements that have closed forms: zero for identical functions and
// RMSE(2f, f) = sqrt(mean f²).
func TestFitErrorsOf(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(51, uint64(d)))
		li := Layout{B: 2, C: 3, N: 8, D: d}
		lr := li
		lr.N = 3
		input := gmtest.Mixtures[float64](rng, gmtest.ScaledSpec(2, 1, 1, false), li.B, li.C, li.N, li.D)
		dense := gmtest.Mixtures[float64](rng, gmtest.ScaledSpec(2, 1, 1, true), li.B, li.C, li.N, li.D)
		reduced := gmtest.Mixtures[float64](rng, gmtest.ScaledSpec(2, 1, 1, true), lr.B, lr.C, lr.N, lr.D)
		const s = 50
		got, err := FitErrorsOf(naiveEval, input, dense, reduced, li, lr, s, 3)
		if err != nil {
			t.Fatal(err)
		}
		pts := make([]float64, li.Mixtures()*s*d)
		FitErrorPoints(pts, input, li, s, 3)
		eval := func(x []float64, l Layout, relu bool) []float64 {
			v := make([]float64, l.Mixtures()*s)
			ps := make([]Prepared[float64], l.N)
			for m := range l.Mixtures() {
				PrepareMixture(d, Mixture(x, l, m), ps)
				for i := range s {
					v[m*s+i] = EvalMixture(d, ps, pts[(m*s+i)*d:(m*s+i+1)*d])
					if relu {
						v[m*s+i] = math.Max(v[m*s+i], 0)
					}
				}
			}
			return v
		}
		fIn, fDense, fRed := eval(input, li, true), eval(dense, li, false), eval(reduced, lr, false)
		want := FitErrors{ReLU: naiveFitError(fDense, fIn), Reduction: naiveFitError(fRed, fDense), All: naiveFitError(fRed, fIn)}
		for _, c := range []struct {
			name      string
			got, want FitError
		}{{"ReLU", got.ReLU, want.ReLU}, {"Reduction", got.Reduction, want.Reduction}, {"All", got.All, want.All}} {
			if math.Abs(c.got.RMSE-c.want.RMSE) > 1e-12*c.want.RMSE || math.Abs(c.got.NRMSE-c.want.NRMSE) > 1e-12*c.want.NRMSE {
				t.Errorf("%dD %s: got %+v, want %+v", d, c.name, c.got, c.want)
			}
		}
		// Closed forms: a positive mixture is its own ReLU; doubling its
		// weights makes the error the function itself.
		double := append([]float64(nil), dense...)
		for i := 0; i < len(double); i += li.Stride() {
			double[i] *= 2
		}
		got, err = FitErrorsOf(naiveEval, dense, dense, double, li, li, s, 4)
		if err != nil {
			t.Fatal(err)
		}
		if got.ReLU.RMSE != 0 {
			t.Errorf("%dD: ReLU error of a positive mixture against itself is %g", d, got.ReLU.RMSE)
		}
		FitErrorPoints(pts, dense, li, s, 4)
		f := eval(dense, li, false)
		var ms float64
		for _, v := range f {
			ms += v * v
		}
		if want := math.Sqrt(ms / float64(len(f))); math.Abs(got.Reduction.RMSE-want) > 1e-12*want {
			t.Errorf("%dD: RMSE(2f, f) = %g, want sqrt(mean f²) = %g", d, got.Reduction.RMSE, want)
		}
	}
}

func naiveFitError(g, f []float64) FitError {
	var mean, se, vf float64
	for _, v := range f {
		mean += v / float64(len(f))
	}
	for i := range f {
		se += (g[i] - f[i]) * (g[i] - f[i])
		vf += (f[i] - mean) * (f[i] - mean)
	}
	return FitError{RMSE: math.Sqrt(se / float64(len(f))), NRMSE: math.Sqrt(se / vf)}
}

// TestFitErrorsOfBadInput checks that mismatched inputs are errors.
func TestFitErrorsOfBadInput(t *testing.T) {
	l := Layout{B: 1, C: 2, N: 3, D: 2}
	lr := l
	lr.N = 2
	x, r := make([]float64, l.Len()), make([]float64, lr.Len())
	l3 := lr
	l3.D = 3
	cases := []struct {
		name           string
		in, dense, red []float64
		lr             Layout
		samples        int
		want           string
	}{
		{"one sample", x, x, r, lr, 1, "at least 2 samples"},
		{"short input", x[1:], x, r, lr, 10, "input has"},
		{"short dense", x, x[1:], r, lr, 10, "dense fit has"},
		{"reduced of other D", x, x, r, l3, 10, "does not match"},
		{"short reduced", x, x, r[1:], lr, 10, "reduced fit has"},
	}
	for _, c := range cases {
		_, err := FitErrorsOf(naiveEval, c.in, c.dense, c.red, l, c.lr, c.samples, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// naiveEval is an Evaluator from Prepare and EvalMixture, one point at a
// time: the reference the fitting errors are checked with, independent of
// any kernel.
func naiveEval(y, x, pts []float64, l Layout, pb, pc, m int) error {
	ps := make([]Prepared[float64], l.N)
	for b := range l.B {
		for c := range l.C {
			mi := b*l.C + c
			PrepareMixture(l.D, Mixture(x, l, mi), ps)
			set := min(b, pb-1)*pc + min(c, pc-1)
			for i := range m {
				p := pts[(set*m+i)*l.D : (set*m+i+1)*l.D]
				y[mi*m+i] = EvalMixture(l.D, ps, p)
			}
		}
	}
	return nil
}
