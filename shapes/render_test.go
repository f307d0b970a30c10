package shapes

import (
	"math"
	"testing"
)

// TestProjectDensity checks the projected density of one Gaussian against
// its closed form: the peak w/(2π σ_x σ_z) at the centre, and the integral
// over the frame (2.5 σ of the wider axis on each side) close to w.
func TestProjectDensity(t *testing.T) {
	// w = 2 at the origin, σ = 2 along x, 0.5 along y and z; View{} looks
	// along y, so the screen shows x and z.
	g := []float32{2, 0, 0, 0, 4, 0, 0, 0, 0.25, 0, 0, 0, 0.25}
	const size = 201
	vals, err := ProjectDensity(g, size, View{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := vals[size/2*size+size/2], 2/(2*math.Pi*2*0.5); math.Abs(got-want) > 1e-9*want {
		t.Errorf("centre %g, want %g", got, want)
	}
	pixel := 2 * 2.5 * 2 / float64(size) // the frame is [−5, 5]²
	sum := 0.0
	for _, v := range vals {
		sum += v * pixel * pixel
	}
	// The frame cuts the x tails beyond 2.5 σ: P(|x| < 2.5σ) = 0.98758.
	if want := 2 * 0.98758; math.Abs(sum-want) > 1e-3 {
		t.Errorf("integral over the frame %g, want %g", sum, want)
	}
	if _, err := ProjectDensity(g, 7, View{}); err == nil {
		t.Error("ProjectDensity accepted a 7-pixel image")
	}
}
