package mixture

import (
	"math"
	"sync/atomic"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/pkg/errors"
)

// symmetryTol is the relative asymmetry |Σ_ij − Σ_ji| / max(1, |Σ_ij|) a
// covariance may carry; float32 round-off in symmetric updates stays far below it.
const symmetryTol = 1e-4

// Validate checks that every component of the packed batch is finite and that
// every covariance is symmetric and positive definite. The error names the
// first offending component (b, c, n) and what was found.
func Validate[T Float](data []T, l Layout) error {
	if len(data) != l.Len() {
		return errors.Errorf("mixture data has %d values, layout %v needs %d", len(data), l.Shape(), l.Len())
	}
	for m := range l.Mixtures() {
		if n, err := ValidateComponents(Mixture(data, l, m), l.D); err != nil {
			return errors.Wrapf(err, "component (b=%d, c=%d, n=%d)", m/l.C, m%l.C, n)
		}
	}
	return nil
}

// ValidateComponents checks the packed components of one mixture in
// dimension d like Validate and returns the index of the first invalid
// component with its error, or (-1, nil).
func ValidateComponents[T Float](mx []T, d int) (int, error) {
	s := PackedLen(d)
	// One branch-free pass settles finiteness for the common, valid case;
	// only a mixture that fails it is searched Gaussian by Gaussian.
	finite := CheckFinite(mx) == nil
	for n := 0; n*s < len(mx); n++ {
		g := mx[n*s : (n+1)*s]
		var err error
		if finite {
			err = validateCovariance(g, d)
		} else {
			err = validateGaussian(g, d)
		}
		if err != nil {
			return n, err
		}
	}
	return -1, nil
}

func validateGaussian[T Float](g []T, d int) error {
	for j, v := range g {
		if !Finite(v) {
			return errors.Errorf("non-finite value %v at packed index %d", v, j)
		}
	}
	return validateCovariance(g, d)
}

// validateCovariance checks the covariance of the finite packed Gaussian g
// like validateGaussian.
func validateCovariance[T Float](g []T, d int) error {
	cov := g[1+d:]
	for r := 0; r < d; r++ {
		for c := r + 1; c < d; c++ {
			// The values are finite here, so the builtin max, which the
			// compiler inlines, gives math.Max's result.
			a, b := float64(cov[r*d+c]), float64(cov[c*d+r])
			if a != b && math.Abs(a-b) > symmetryTol*max(1, math.Abs(a), math.Abs(b)) {
				return errors.Errorf("covariance is not symmetric: Σ[%d,%d] = %g, Σ[%d,%d] = %g", r, c, a, c, r, b)
			}
		}
	}
	if !PositiveDefinite(cov, d) {
		return errors.Errorf("covariance %v is not positive definite", cov)
	}
	return nil
}

// PositiveDefinite reports whether the symmetric d×d row-major matrix m
// (d = 2 or 3) is positive definite, by Sylvester's criterion.
func PositiveDefinite[T Float](m []T, d int) bool {
	a := float64(m[0])
	if !(a > 0) {
		return false
	}
	m2 := float64(m[0])*float64(m[d+1]) - float64(m[1])*float64(m[d])
	if !(m2 > 0) {
		return false
	}
	if d == 2 {
		return true
	}
	return Det3(m) > 0
}

// Det3 returns the determinant of the 3×3 row-major matrix m in float64.
func Det3[T Float](m []T) float64 {
	a, b, c := float64(m[0]), float64(m[1]), float64(m[2])
	d, e, f := float64(m[3]), float64(m[4]), float64(m[5])
	g, h, i := float64(m[6]), float64(m[7]), float64(m[8])
	return a*(e*i-f*h) - b*(d*i-f*g) + c*(d*h-e*g)
}

// finiteChunk is the length of the parts of data that CheckFinite checks in
// parallel: the ops check whole batches, several megabytes, on one goroutine
// otherwise, while the other cores wait.
const finiteChunk = 1 << 15

// CheckFinite returns an error naming the first NaN or Inf in data.
func CheckFinite[T Float](data []T) error {
	if i := FirstNonFinite(data); i >= 0 {
		return errors.Errorf("non-finite value %v at flat index %d", data[i], i)
	}
	return nil
}

// FirstNonFinite returns the index of the first NaN or Inf in data, or −1.
// Data longer than finiteChunk is checked in parallel parts.
func FirstNonFinite[T Float](data []T) int {
	if len(data) <= finiteChunk {
		return firstNonFinite(data)
	}
	var bad atomic.Bool
	parallel.For((len(data)+finiteChunk-1)/finiteChunk, func(i int) {
		if !allFinite(data[i*finiteChunk : min((i+1)*finiteChunk, len(data))]) {
			bad.Store(true)
		}
	})
	if !bad.Load() {
		return -1
	}
	return firstNonFinite(data) // the first, whichever part found one
}

// firstNonFinite is FirstNonFinite on one goroutine.
func firstNonFinite[T Float](data []T) int {
	if allFinite(data) {
		return -1
	}
	for i, v := range data {
		if !Finite(v) {
			return i
		}
	}
	return -1
}

// allFinite reports whether data holds no NaN or Inf. v·0 is ±0 for finite
// v and NaN for NaN and ±Inf, so four running sums of it stay 0 exactly
// when data is finite: one multiply-add per value, without a branch, and
// the search for the first bad value only after a failure.
func allFinite[T Float](data []T) bool {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(data); i += 4 {
		v := data[i : i+4 : i+4]
		s0 += v[0] * 0
		s1 += v[1] * 0
		s2 += v[2] * 0
		s3 += v[3] * 0
	}
	for _, v := range data[i:] {
		s0 += v * 0
	}
	return s0+s1+s2+s3 == 0
}

// Finite reports whether v is neither NaN nor ±Inf: only then is v − v 0.
// It is one subtraction and one comparison, without math.IsNaN and
// math.IsInf's conversions, for the checks on hot paths.
func Finite[T Float](v T) bool { return v-v == 0 }
