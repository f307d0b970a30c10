package models

import (
	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// AssembledKernel returns block b's convolution kernels as the forward pass
// uses them, assembled from the current raw parameters: float64 values of
// layout [F_o, F_i, N_k, 1+D+D²] (out channel, in channel, Gaussian).
func (m *Model) AssembledKernel(b int) ([]float64, mixture.Layout, error) {
	if b < 0 || b >= len(m.Kernels) {
		return nil, mixture.Layout{}, errors.Errorf("model: block %d of %d", b+1, len(m.Kernels))
	}
	raw := m.Kernels[b].Learnables()
	v, err := ops.NewAssembleKernel(gmnode.DeviceOf(m.Graph), m.Kernels[b].Config()).Do(raw[0].Value(), raw[1].Value(), raw[2].Value())
	if err != nil {
		return nil, mixture.Layout{}, errors.Wrapf(err, "kernels of block %d", b+1)
	}
	t := v.(*tensor.Dense)
	l, err := mixture.LayoutOf(t.Shape())
	if err != nil {
		return nil, mixture.Layout{}, errors.Wrapf(err, "kernels of block %d", b+1)
	}
	return Float64s(t), l, nil
}
