package gmnode

import "gorgonia.org/tensor"

// Scalar returns v in the dtype dt, float32 or float64, as G.NewConstant
// and tensor memsets take it: a graph's constants must share its dtype.
func Scalar(dt tensor.Dtype, v float64) any {
	if dt == tensor.Float64 {
		return v
	}
	return float32(v)
}
