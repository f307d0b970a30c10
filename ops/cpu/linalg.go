package cpu

import "github.com/gmcn-go/gmcn/ops/mixture"

// Float is the element type every kernel is generic over.
type Float = mixture.Float

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
