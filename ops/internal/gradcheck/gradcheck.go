// Package gradcheck holds the finite-difference machinery the gmcn gradient
// tests share: central differences over a float64 parameter slice and the
// error measure they are judged by.
package gradcheck

import "math"

// Step is the default central-difference step. With float64 and O(1)
// inputs the truncation error h²·f”' ≈ 1e-10 and the round-off ε/h ≈ 1e-11
// both stay far below the 1e-6 tolerance.
const Step = 1e-5

// Central returns the central-difference gradient of f with respect to every
// element of x: (f(x+h·e_i) − f(x−h·e_i)) / 2h. f must read x afresh on each
// call; x is restored afterwards.
func Central(f func() float64, x []float64, h float64) []float64 {
	g := make([]float64, len(x))
	for i := range x {
		v := x[i]
		x[i] = v + h
		fp := f()
		x[i] = v - h
		fm := f()
		x[i] = v
		g[i] = (fp - fm) / (2 * h)
	}
	return g
}

// RelErr returns max_i |a_i − n_i| / max_i |n_i|: the error of the analytic
// gradient a relative to the size of the numerical gradient n as a whole.
// Relating to the whole tensor, not to each element, keeps entries that are
// zero or tiny from dominating. If n is all zero the absolute error is returned.
func RelErr(a, n []float64) float64 {
	var diff, scale float64
	for i := range a {
		diff = math.Max(diff, math.Abs(a[i]-n[i]))
		scale = math.Max(scale, math.Abs(n[i]))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

// Dot returns Σ a_i·b_i; tests reduce an op's output to the scalar loss
// L = Σ y_i·r_i with fixed random r, whose gradient ∂L/∂y = r.
func Dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
