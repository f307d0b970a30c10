package mixture

import (
	"math"
	"math/rand/v2"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/pkg/errors"
)

// DefaultFitErrorSamples is the number of sample points per mixture that the
// fitting-error measurements use unless told otherwise.
const DefaultFitErrorSamples = 1000

// fitErrorMargin is how many standard deviations of the widest component the
// sampling box extends beyond the component positions: 3σ holds all but
// 0.3 % of a Gaussian's mass per axis, so the box covers where the mixture
// is non-negligible without wasting most samples on empty space.
const fitErrorMargin = 3

// FitErrorPoints writes s sample points per mixture of x (layout l) into
// pts [B, C, s, D], drawn uniformly from the box
//
//	[min_k μ_kj − 3σ_j, max_k μ_kj + 3σ_j] for each axis j, σ_j = max_k sqrt(Σ_k,jj),
//
// where k runs over the components with w ≠ 0 (all components if every
// weight is zero), so zero-weight padding at the origin does not stretch
// the box. Mixture m draws from its own PCG stream (seed, m), so the points
// are reproducible and do not depend on scheduling.
func FitErrorPoints[T Float](pts, x []T, l Layout, s int, seed uint64) {
	d, st := l.D, l.Stride()
	parallel.For(l.Mixtures(), func(m int) {
		mx := Mixture(x, l, m)
		var lo, hi, sd [3]float64
		for j := range d {
			lo[j], hi[j] = math.Inf(1), math.Inf(-1)
		}
		anyWeight := false
		for k := 0; k < len(mx); k += st {
			anyWeight = anyWeight || mx[k] != 0
		}
		for k := 0; k < len(mx); k += st {
			if anyWeight && mx[k] == 0 {
				continue
			}
			for j := range d {
				p := float64(mx[k+1+j])
				lo[j], hi[j] = math.Min(lo[j], p), math.Max(hi[j], p)
				sd[j] = math.Max(sd[j], math.Sqrt(float64(mx[k+1+d+j*(d+1)])))
			}
		}
		rng := rand.New(rand.NewPCG(seed, uint64(m)))
		out := pts[m*s*d : (m+1)*s*d]
		for i := range s {
			for j := range d {
				a, b := lo[j]-fitErrorMargin*sd[j], hi[j]+fitErrorMargin*sd[j]
				out[i*d+j] = T(a + (b-a)*rng.Float64())
			}
		}
	})
}

// FitError is one fitting-error measurement over a batch: the root mean
// square difference between an approximation g and a target f over every
// sample point of every mixture, and the same divided by the standard
// deviation of f over those points. The reference's fitting.mse is the
// square of NRMSE (it standardises both functions with f's mean and sd).
type FitError struct {
	RMSE, NRMSE float64
}

// FitErrors are the three measurements of one fitting layer (the paper's
// em_split table): ReLU compares the dense fit with ReLU of the input,
// Reduction the reduced fit with the dense fit, All the reduced fit with
// ReLU of the input.
type FitErrors struct {
	ReLU, Reduction, All FitError
}

// Evaluator evaluates the mixtures x (layout l) at the point sets pts
// [pb, pc, m, D] into y [B, C, m]: a device's Evaluate (ops/device.Kernels).
type Evaluator[T Float] func(y, x, pts []T, l Layout, pb, pc, m int) error

// FitErrorsOf measures the fitting errors of one layer: input is the
// mixture before the activation (layout li), dense its dense ReLU fit (same
// layout) and reduced the reduced fit (layout lr, same B, C and D; pass
// dense again if nothing was reduced). All three are evaluated with eval at
// FitErrorPoints(input, samples, seed), so the measurements share their
// sample points.
func FitErrorsOf[T Float](eval Evaluator[T], input, dense, reduced []T, li, lr Layout, samples int, seed uint64) (FitErrors, error) {
	switch {
	case samples < 2:
		return FitErrors{}, errors.Errorf("fitting error: need at least 2 samples per mixture, got %d", samples)
	case len(input) != li.Len():
		return FitErrors{}, errors.Errorf("fitting error: input has %d values, layout %v needs %d", len(input), li.Shape(), li.Len())
	case len(dense) != li.Len():
		return FitErrors{}, errors.Errorf("fitting error: dense fit has %d values, layout %v needs %d", len(dense), li.Shape(), li.Len())
	case lr.B != li.B || lr.C != li.C || lr.D != li.D:
		return FitErrors{}, errors.Errorf("fitting error: reduced fit layout %v does not match the input's batch, channels and dimension %v", lr.Shape(), li.Shape())
	case len(reduced) != lr.Len():
		return FitErrors{}, errors.Errorf("fitting error: reduced fit has %d values, layout %v needs %d", len(reduced), lr.Shape(), lr.Len())
	}
	n := li.Mixtures() * samples
	pts := make([]T, n*li.D)
	FitErrorPoints(pts, input, li, samples, seed)
	vIn, vDense, vRed := make([]T, n), make([]T, n), make([]T, n)
	for _, e := range []struct {
		y, x []T
		l    Layout
	}{{vIn, input, li}, {vDense, dense, li}, {vRed, reduced, lr}} {
		if err := eval(e.y, e.x, pts, e.l, e.l.B, e.l.C, samples); err != nil {
			return FitErrors{}, errors.Wrap(err, "fitting error")
		}
	}
	for i, v := range vIn {
		vIn[i] = max(v, 0)
	}
	return FitErrors{
		ReLU:      fitError(vDense, vIn),
		Reduction: fitError(vRed, vDense),
		All:       fitError(vRed, vIn),
	}, nil
}

// fitError returns the RMSE of g against f and its ratio to the population
// sd of f (+Inf if f is constant and g is not, NaN if both are).
func fitError[T Float](g, f []T) FitError {
	var mean float64
	for _, v := range f {
		mean += float64(v)
	}
	mean /= float64(len(f))
	var se, vf float64
	for i := range f {
		e := float64(g[i]) - float64(f[i])
		se += e * e
		c := float64(f[i]) - mean
		vf += c * c
	}
	rmse := math.Sqrt(se / float64(len(f)))
	return FitError{RMSE: rmse, NRMSE: rmse / math.Sqrt(vf/float64(len(f)))}
}
