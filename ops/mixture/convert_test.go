package mixture

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConvertClosedForm checks the amplitude of known Gaussians:
// α = w / sqrt((2π)^D det Σ).
func TestConvertClosedForm(t *testing.T) {
	l2 := Layout{B: 1, C: 1, N: 1, D: 2}
	x := []float64{3, 1, 2, 4, 0, 0, 9} // det Σ = 36
	IntegralsToAmplitudes(x, l2)
	if want := 3 / (2 * math.Pi * 6); math.Abs(x[0]-want) > 1e-15 {
		t.Errorf("2D amplitude %g, want %g", x[0], want)
	}
	l3 := Layout{B: 1, C: 1, N: 1, D: 3}
	y := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}
	IntegralsToAmplitudes(y, l3)
	if want := math.Pow(2*math.Pi, -1.5); math.Abs(y[0]-want) > 1e-15 {
		t.Errorf("3D standard normal amplitude %g, want %g", y[0], want)
	}
	AmplitudesToIntegrals(y, l3)
	if math.Abs(y[0]-1) > 1e-15 {
		t.Errorf("back to integral: %g, want 1", y[0])
	}
	if x[1] != 1 || x[3] != 4 || x[6] != 9 {
		t.Errorf("conversion touched positions or covariances: %v", x)
	}
}

// TestConvertRoundTrip converts random float32 batches to amplitudes and back.
func TestConvertRoundTrip(t *testing.T) {
	for _, d := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(64, uint64(d)))
		l := Layout{B: 3, C: 2, N: 10, D: d}
		gs := plyRandom(rng, l.B*l.C*l.N, d)
		x, err := Pack[float32](l, gs)
		if err != nil {
			t.Fatal(err)
		}
		orig := append([]float32(nil), x...)
		IntegralsToAmplitudes(x, l)
		AmplitudesToIntegrals(x, l)
		for i := range x {
			if e := math.Abs(float64(x[i]-orig[i])) / math.Max(1, math.Abs(float64(orig[i]))); e > 1e-5 {
				t.Fatalf("%dD: element %d is %g after the round trip, was %g", d, i, x[i], orig[i])
			}
		}
	}
}
