package gmtest

// Convert returns x converted element by element to T (rounded to nearest
// when T is float32); nil stays nil, as an optional input.
func Convert[T, S Float](x []S) []T {
	if x == nil {
		return nil
	}
	y := make([]T, len(x))
	for i, v := range x {
		y[i] = T(v)
	}
	return y
}

// To32 returns x rounded to float32.
func To32(x []float64) []float32 { return Convert[float32](x) }

// To64 returns x widened to float64.
func To64(x []float32) []float64 { return Convert[float64](x) }
