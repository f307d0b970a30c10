package gmtest

import "testing"

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

// Richardson returns the central-difference gradient extrapolated to
// fourth order, (4·Central(h/2) − Central(h))/3: for losses curved enough
// that Central's truncation error h²·f”'/6 reaches the tolerance (a chain
// of iterations, say), without the round-off of a smaller step.
func Richardson(f func() float64, x []float64, h float64) []float64 {
	g, half := Central(f, x, h), Central(f, x, h/2)
	for i := range g {
		g[i] = (4*half[i] - g[i]) / 3
	}
	return g
}

// Left returns the one-sided gradient of f from the left with respect to
// every element of x, to second order: (3f(x) − 4f(x−h·e_i) + f(x−2h·e_i))/2h.
// It checks a derivative taken at a kink as the left one, where a central
// difference would mix both sides. f must read x afresh on each call; x is
// restored afterwards.
func Left(f func() float64, x []float64, h float64) []float64 {
	g := make([]float64, len(x))
	f0 := f()
	for i := range x {
		v := x[i]
		x[i] = v - h
		f1 := f()
		x[i] = v - 2*h
		f2 := f()
		x[i] = v
		g[i] = (3*f0 - 4*f1 + f2) / (2 * h)
	}
	return g
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

// GradTol is the relative error (RelErr) an analytic float64 gradient must
// reach against central differences with Step on well-conditioned inputs.
const GradTol = 1e-6

// WantGrad fails t unless grad, the analytic gradient of loss with respect to
// x, matches Central(loss, x, Step) within GradTol; a NaN in grad fails.
func WantGrad(t testing.TB, what string, grad, x []float64, loss func() float64) {
	t.Helper()
	num := Central(loss, x, Step)
	if e := RelErr(grad, num); !(e <= GradTol) {
		t.Errorf("%s: relative gradient error %.3g > %g\nanalytic %v\nnumeric  %v", what, e, GradTol, grad, num)
	}
}
