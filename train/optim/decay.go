package optim

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// WeightDecay takes the reference's decoupled weight-decay step on one
// kernel: a plain SGD step with learning rate lr on the decay loss
// mean(w²) + mean((AAᵀ−I)²) of its raw weights w and its covariance factors
// a of dimension d (docs/algorithms.md, "Optimisation"), its gradient
// computed by k, the kernels of the model's device, as the graph's
// WeightDecay op computes it. It runs apart from Adam, as in the reference,
// so the decay does not pass through Adam's moment estimates.
func WeightDecay[T mixture.Float](k device.Kernels[T], w, a []T, d int, lr T) error {
	dw, da := make([]T, len(w)), make([]T, len(a))
	if err := k.WeightDecayBackward(dw, da, w, a, d, 1); err != nil {
		return err
	}
	for i := range w {
		w[i] -= lr * dw[i]
	}
	for i := range a {
		a[i] -= lr * da[i]
	}
	return nil
}
