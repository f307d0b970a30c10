package mixture

import (
	"math"
	"testing"
)

// TestSameBits checks bitwise equality: signed zeros differ, equal NaNs
// match, and lengths must agree.
func TestSameBits(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		a, b []float64
		want bool
	}{
		{[]float64{1, 2}, []float64{1, 2}, true},
		{[]float64{0}, []float64{math.Copysign(0, -1)}, false},
		{[]float64{nan}, []float64{nan}, true},
		{[]float64{1}, []float64{1, 1}, false},
		{nil, []float64{}, true},
	} {
		if got := SameBits(c.a, c.b); got != c.want {
			t.Errorf("SameBits(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if !SameBits([]float32{1.5, -2}, []float32{1.5, -2}) || SameBits([]float32{1}, []float32{-1}) {
		t.Errorf("SameBits on float32 compares wrongly")
	}
}
