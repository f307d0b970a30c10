//go:build goexperiment.simd && amd64

package cpu

// hemExpVec holds the constants of expVec8 for hemExpFast, made only where
// the CPU runs them.
var hemExpVec = func() (c expVec8) {
	if cpuAVX2FMA {
		c = newExpVec8()
	}
	return c
}()

// hemExpFast replaces every v[i] by e^v[i] with expVec8, eight lanes at a
// time, for float32 on CPUs with AVX2 and FMA, and reports whether it did.
// An EM fit of TreeHEM with T = 2 has at most eight likelihoods.
func hemExpFast[T Float](v []T) bool {
	f, ok := any(v).([]float32)
	if !ok || !cpuAVX2FMA {
		return false
	}
	for ; len(f) > 0; f = f[min(8, len(f)):] {
		// expVec8 clamps a NaN into range; it stays NaN as in expSlice32, so
		// that a fit gone non-finite stays so and its entries are dropped by
		// the parent's |w| filter instead of passing on as finite garbage.
		x := loadPart8(f)
		storePart8(x.Merge(hemExpVec.exp(x), x.IsNaN()), f)
	}
	return true
}
