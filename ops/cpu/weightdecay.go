package cpu

// WeightDecay returns the reference's weight-decay loss of one convolution
// layer, mean(w²) + mean((A·Aᵀ − I)²), the means running over every element
// of w and of the stacked d×d products. It pulls the raw weights to zero (the
// effective weights to WeightMean) and the covariance factors towards
// orthogonal matrices; positions are not decayed.
func WeightDecay[T Float](w, a []T, d int) float64 {
	var sw float64
	for _, v := range w {
		sw += float64(v) * float64(v)
	}
	var m [9]T
	var sa float64
	dd := d * d
	for i := 0; i+dd <= len(a); i += dd {
		gram(d, a[i:i+dd], m[:dd])
		for r := range d {
			m[r*(d+1)]--
		}
		for _, v := range m[:dd] {
			sa += float64(v) * float64(v)
		}
	}
	return sw/float64(len(w)) + sa/float64(len(a))
}

// WeightDecayWeightsBackward writes ∂L/∂w = g·2w/len(w) for the incoming
// gradient g of the WeightDecay loss.
func WeightDecayWeightsBackward[T Float](dw, w []T, g T) {
	c := 2 * g / T(len(w))
	for i, v := range w {
		dw[i] = c * v
	}
}

// WeightDecayFactorsBackward writes ∂L/∂A for the incoming gradient g of the
// WeightDecay loss: with E = A·Aᵀ − I (symmetric), ∂L/∂(A·Aᵀ) = 2g·E/len(a)
// and hence ∂L/∂A = 4g·E·A/len(a). d is 2 or 3: the trainer applies it to
// every kernel once per step, so each dimension has its own loop over
// fixed-size factors, without the general d×d loops' bounds checks.
func WeightDecayFactorsBackward[T Float](da, a []T, d int, g T) {
	c := 2 * g / T(len(a))
	if d == 2 {
		for i := 0; i+4 <= len(a); i += 4 {
			f, o := (*[4]T)(a[i:i+4]), (*[4]T)(da[i:i+4])
			// 2E, whose rows times the columns of A give ∂L/∂A ÷ c.
			e00 := 2 * (f[0]*f[0] + f[1]*f[1] - 1)
			e01 := 2 * (f[0]*f[2] + f[1]*f[3])
			e11 := 2 * (f[2]*f[2] + f[3]*f[3] - 1)
			o[0] = c * (e00*f[0] + e01*f[2])
			o[1] = c * (e00*f[1] + e01*f[3])
			o[2] = c * (e01*f[0] + e11*f[2])
			o[3] = c * (e01*f[1] + e11*f[3])
		}
		return
	}
	for i := 0; i+9 <= len(a); i += 9 {
		f, o := (*[9]T)(a[i:i+9]), (*[9]T)(da[i:i+9])
		var e [9]T // 2E
		for r := range 3 {
			for s := range r + 1 {
				v := f[3*r]*f[3*s] + f[3*r+1]*f[3*s+1] + f[3*r+2]*f[3*s+2]
				if r == s {
					v--
				}
				e[3*r+s], e[3*s+r] = 2*v, 2*v
			}
		}
		for r := range 3 {
			for j := range 3 {
				o[3*r+j] = c * (e[3*r]*f[j] + e[3*r+1]*f[3+j] + e[3*r+2]*f[6+j])
			}
		}
	}
}
