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
// and hence ∂L/∂A = 4g·E·A/len(a).
func WeightDecayFactorsBackward[T Float](da, a []T, d int, g T) {
	var e [9]T
	dd := d * d
	c := 2 * g / T(len(a))
	for i := 0; i+dd <= len(a); i += dd {
		gram(d, a[i:i+dd], e[:dd])
		for r := range d {
			e[r*(d+1)]--
		}
		symGradFactor(d, e[:dd], a[i:i+dd], da[i:i+dd], c)
	}
}
