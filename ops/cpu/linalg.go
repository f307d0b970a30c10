package cpu

import "github.com/gmcn-go/gmcn/ops/mixture"

// Float is the element type every kernel is generic over.
type Float = mixture.Float

// invDet writes the inverse of the symmetric d×d row-major matrix m (d = 2 or
// 3) into inv and returns det m. The caller checks det > 0 beforehand or
// afterwards; a singular m yields Inf/NaN entries, never a panic.
func invDet[T Float](d int, m, inv []T) T {
	if d == 2 {
		det := m[0]*m[3] - m[1]*m[2]
		r := 1 / det
		inv[0], inv[1], inv[2], inv[3] = m[3]*r, -m[1]*r, -m[2]*r, m[0]*r
		return det
	}
	a, b, c := m[0], m[1], m[2]
	dd, e, f := m[3], m[4], m[5]
	g, h, i := m[6], m[7], m[8]
	c00, c01, c02 := e*i-f*h, -(dd*i - f*g), dd*h-e*g
	det := a*c00 + b*c01 + c*c02
	r := 1 / det
	inv[0], inv[3], inv[6] = c00*r, c01*r, c02*r
	inv[1], inv[4], inv[7] = -(b*i-c*h)*r, (a*i-c*g)*r, -(a*h-b*g)*r
	inv[2], inv[5], inv[8] = (b*f-c*e)*r, -(a*f-c*dd)*r, (a*e-b*dd)*r
	return det
}

// quadForm returns tᵀ A t for the d×d row-major matrix A.
func quadForm[T Float](d int, a, t []T) T {
	if d == 2 {
		return a[0]*t[0]*t[0] + (a[1]+a[2])*t[0]*t[1] + a[3]*t[1]*t[1]
	}
	return a[0]*t[0]*t[0] + a[4]*t[1]*t[1] + a[8]*t[2]*t[2] +
		(a[1]+a[3])*t[0]*t[1] + (a[2]+a[6])*t[0]*t[2] + (a[5]+a[7])*t[1]*t[2]
}

// matVec writes A t into out for the d×d row-major matrix A.
func matVec[T Float](d int, a, t, out []T) {
	for r := range d {
		var s T
		for c := range d {
			s += a[r*d+c] * t[c]
		}
		out[r] = s
	}
}

// matMul writes A·B into out for d×d row-major matrices; out must not
// alias a or b.
func matMul[T Float](d int, a, b, out []T) {
	for r := range d {
		for c := range d {
			var s T
			for k := range d {
				s += a[r*d+k] * b[k*d+c]
			}
			out[r*d+c] = s
		}
	}
}
