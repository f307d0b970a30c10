package cpu

import (
	"math"
	"unsafe"
)

// Constants of the float32 polynomial exponential (Cephes expf): e^x is
// split as 2^n·e^r with n = round(x·log₂e) and |r| ≤ ½·ln 2, r evaluated in
// two steps against ln 2 = ln2Hi + ln2Lo so that n·ln2Hi is exact, and e^r
// approximated by 1 + r + r²·P(r) with a degree-5 minimax P. The result is
// within 2 ulp of e^x for normal results.
const (
	expLog2e   = 1.44269504088896341
	expLn2Hi   = 0.693359375
	expLn2Lo   = -2.12194440e-4
	expP0      = 1.9875691500e-4
	expP1      = 1.3981999507e-3
	expP2      = 8.3334519073e-3
	expP3      = 4.1665795894e-2
	expP4      = 1.6666665459e-1
	expP5      = 5.0000001201e-1
	expMaxArg  = 88.0
	expMinArg  = -88.0
	expBias    = 127
	expMantLen = 23
	// expRound is 1.5·2²³: adding it to a float32 of magnitude < 2²² rounds
	// to an integer (ties to even) in the low mantissa bits.
	expRound = 12582912.0
)

// expSlice32 replaces every v[i] by e^v[i] in float32 precision without
// calling math.Exp; the polynomial is written in the loop because a function
// per element would be too large to inline. Arguments are clamped to
// [−88, 88]: at −88 the exponent 2ⁿ becomes n = −127, whose biased exponent
// field is 0, so every x ≤ −87.68 yields exactly 0 and results below the
// smallest normal float32 (x < −87.34) are flushed towards 0; at 88 the
// result (≈1.65e38) still fits. Dense ReLU fitting never needs larger
// arguments: they are log-densities of Gaussians. NaN stays NaN.
func expSlice32(v []float32) {
	for i, x := range v {
		// Comparisons, not min/max: the builtins' NaN and ±0 rules cost a
		// dozen instructions, and NaN passes both tests unchanged anyway.
		if x < expMinArg {
			x = expMinArg
		}
		if x > expMaxArg {
			x = expMaxArg
		}
		t := x*expLog2e + expRound
		n := t - expRound
		r := x - n*expLn2Hi
		r -= n * expLn2Lo
		p := float32(expP0)
		p = p*r + expP1
		p = p*r + expP2
		p = p*r + expP3
		p = p*r + expP4
		p = p*r + expP5
		p = p*r*r + r + 1
		v[i] = p * math.Float32frombits(uint32(int32(n)+expBias)<<expMantLen)
	}
}

// expRow replaces every v[i] by e^v[i]: the polynomial in float32, math.Exp
// in float64, where the exact value is what the gradient checks rely on. The
// size test is a constant in each instantiation.
func expRow[T Float](v []T) {
	if len(v) == 0 {
		return
	}
	if unsafe.Sizeof(v[0]) == 4 {
		// T has underlying type float32, so the reinterpretation is exact.
		expSlice32(unsafe.Slice((*float32)(unsafe.Pointer(&v[0])), len(v)))
		return
	}
	for i, x := range v {
		v[i] = T(math.Exp(float64(x)))
	}
}
