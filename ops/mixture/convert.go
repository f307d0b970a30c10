package mixture

import "math"

// IntegralsToAmplitudes replaces every weight w (the component's integral) by
// its amplitude α = w / sqrt((2π)^D det Σ), in place.
func IntegralsToAmplitudes[T Float](data []T, l Layout) {
	scaleWeights(data, l, -1)
}

// AmplitudesToIntegrals replaces every amplitude α by the component's integral
// w = α · sqrt((2π)^D det Σ), in place.
func AmplitudesToIntegrals[T Float](data []T, l Layout) {
	scaleWeights(data, l, +1)
}

func scaleWeights[T Float](data []T, l Layout, sign float64) {
	s := l.Stride()
	for i := 0; i+s <= len(data); i += s {
		g := data[i : i+s]
		norm := math.Sqrt(math.Pow(2*math.Pi, float64(l.D)) * Det(g[1+l.D:], l.D))
		g[0] = T(float64(g[0]) * math.Pow(norm, sign))
	}
}

// Det returns the determinant of a d×d row-major matrix (d = 2 or 3) in float64.
func Det[T Float](m []T, d int) float64 {
	if d == 2 {
		return float64(m[0])*float64(m[3]) - float64(m[1])*float64(m[2])
	}
	return Det3(m)
}
