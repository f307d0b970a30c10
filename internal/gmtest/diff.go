package gmtest

import "math"

// MaxAbs returns max_i |a_i|.
func MaxAbs[T Float](a []T) float64 {
	var m float64
	for _, v := range a {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// MaxAbsDiff returns max_i |a_i − b_i| in float64; b must be at least as long
// as a.
func MaxAbsDiff[A, B Float](a []A, b []B) float64 {
	var e float64
	for i := range a {
		e = math.Max(e, math.Abs(float64(a[i])-float64(b[i])))
	}
	return e
}

// RelErr returns max_i |a_i − b_i| / max_i |b_i|: the error of a relative to
// the size of the reference b as a whole. Relating to the whole tensor, not
// to each element, keeps entries that are zero or tiny from dominating. If b
// is all zero the absolute error is returned.
func RelErr[A, B Float](a []A, b []B) float64 {
	diff, scale := MaxAbsDiff(a, b), MaxAbs(b)
	if scale == 0 {
		return diff
	}
	return diff / scale
}
