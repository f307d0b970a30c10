//go:build gmcuda

package ops

import (
	"fmt"
	"os"

	"github.com/gmcn-go/gmcn/cudaops"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// init selects the GPU for the gmcuda build and says so; if the context
// cannot be created the ops stay on the CPU and the reason is printed.
func init() {
	d, err := cudaops.Default()
	if err != nil {
		fmt.Fprintf(os.Stderr, "gmcn: no usable CUDA device (%v); GM ops run on the CPU\n", err)
		return
	}
	backend = cudaBackend{d}
}

// cudaBackend adapts the generic launchers of cudaops to Backend: each
// method picks the float32 or float64 instantiation by the output's type.
type cudaBackend struct{ d *cudaops.Device }

func (b cudaBackend) Name() string { return "CUDA " + b.d.String() }

func (b cudaBackend) Integrate(y, x any, l mixture.Layout) error {
	if y, ok := y.([]float32); ok {
		return cudaops.Integrate(b.d, y, x.([]float32), l)
	}
	return cudaops.Integrate(b.d, y.([]float64), x.([]float64), l)
}

func (b cudaBackend) IntegrateBackward(dx, g any, l mixture.Layout) error {
	if dx, ok := dx.([]float32); ok {
		return cudaops.IntegrateBackward(b.d, dx, g.([]float32), l)
	}
	return cudaops.IntegrateBackward(b.d, dx.([]float64), g.([]float64), l)
}

func (b cudaBackend) Conv(y, x, k any, lx, lk mixture.Layout) error {
	if y, ok := y.([]float32); ok {
		return cudaops.Conv(b.d, y, x.([]float32), k.([]float32), lx, lk)
	}
	return cudaops.Conv(b.d, y.([]float64), x.([]float64), k.([]float64), lx, lk)
}

func (b cudaBackend) ConvBackwardData(dx, g, k any, lx, lk mixture.Layout) error {
	if dx, ok := dx.([]float32); ok {
		return cudaops.ConvBackwardData(b.d, dx, g.([]float32), k.([]float32), lx, lk)
	}
	return cudaops.ConvBackwardData(b.d, dx.([]float64), g.([]float64), k.([]float64), lx, lk)
}

func (b cudaBackend) ConvBackwardKernels(dk, g, x any, lx, lk mixture.Layout) error {
	if dk, ok := dk.([]float32); ok {
		return cudaops.ConvBackwardKernels(b.d, dk, g.([]float32), x.([]float32), lx, lk)
	}
	return cudaops.ConvBackwardKernels(b.d, dk.([]float64), g.([]float64), x.([]float64), lx, lk)
}

func (b cudaBackend) Evaluate(y, x, pts any, l mixture.Layout, pb, pc, m int) error {
	if y, ok := y.([]float32); ok {
		return cudaops.Evaluate(b.d, y, x.([]float32), pts.([]float32), l, pb, pc, m)
	}
	return cudaops.Evaluate(b.d, y.([]float64), x.([]float64), pts.([]float64), l, pb, pc, m)
}

func (b cudaBackend) EvaluateBackwardMixture(dx, x, pts, g any, l mixture.Layout, pb, pc, m int) error {
	if dx, ok := dx.([]float32); ok {
		return cudaops.EvaluateBackwardMixture(b.d, dx, x.([]float32), pts.([]float32), g.([]float32), l, pb, pc, m)
	}
	return cudaops.EvaluateBackwardMixture(b.d, dx.([]float64), x.([]float64), pts.([]float64), g.([]float64), l, pb, pc, m)
}

func (b cudaBackend) EvaluateBackwardPoints(dp, x, pts, g any, l mixture.Layout, pb, pc, m int) error {
	if dp, ok := dp.([]float32); ok {
		return cudaops.EvaluateBackwardPoints(b.d, dp, x.([]float32), pts.([]float32), g.([]float32), l, pb, pc, m)
	}
	return cudaops.EvaluateBackwardPoints(b.d, dp.([]float64), x.([]float64), pts.([]float64), g.([]float64), l, pb, pc, m)
}

func (b cudaBackend) ReLUFit(y, x any, l mixture.Layout, opts cpu.ReLUFitOptions) error {
	if y, ok := y.([]float32); ok {
		return cudaops.ReLUFit(b.d, y, x.([]float32), l, opts)
	}
	return cudaops.ReLUFit(b.d, y.([]float64), x.([]float64), l, opts)
}

func (b cudaBackend) ReLUFitBackward(dx, x, g any, l mixture.Layout, opts cpu.ReLUFitOptions) error {
	if dx, ok := dx.([]float32); ok {
		return cudaops.ReLUFitBackward(b.d, dx, x.([]float32), g.([]float32), l, opts)
	}
	return cudaops.ReLUFitBackward(b.d, dx.([]float64), x.([]float64), g.([]float64), l, opts)
}

func (b cudaBackend) MeanTraces(tau []float64, x any, l mixture.Layout) error {
	if x, ok := x.([]float32); ok {
		return cudaops.MeanTraces(b.d, tau, x, l)
	}
	return cudaops.MeanTraces(b.d, tau, x.([]float64), l)
}

func (b cudaBackend) ScaleMixtures(y, x any, l mixture.Layout, s any) error {
	if y, ok := y.([]float32); ok {
		return cudaops.ScaleMixtures(b.d, y, x.([]float32), l, s.([]float32))
	}
	return cudaops.ScaleMixtures(b.d, y.([]float64), x.([]float64), l, s.([]float64))
}

func (b cudaBackend) CovScaleBackward(dx, g, x any, l mixture.Layout, s any, tau []float64) error {
	if dx, ok := dx.([]float32); ok {
		return cudaops.CovScaleBackward(b.d, dx, g.([]float32), x.([]float32), l, s.([]float32), tau)
	}
	return cudaops.CovScaleBackward(b.d, dx.([]float64), g.([]float64), x.([]float64), l, s.([]float64), tau)
}

func (b cudaBackend) AssembleKernel(out, w, p, a any, l mixture.Layout, cfg cpu.KernelConfig, eps float64) error {
	if out, ok := out.([]float32); ok {
		return cudaops.AssembleKernel(b.d, out, w.([]float32), p.([]float32), a.([]float32), l, cfg, eps)
	}
	return cudaops.AssembleKernel(b.d, out.([]float64), w.([]float64), p.([]float64), a.([]float64), l, cfg, eps)
}

func (b cudaBackend) AssembleKernelBackward(dw, dp, da, g, a any, l mixture.Layout, cfg cpu.KernelConfig) error {
	if dw, ok := dw.([]float32); ok {
		return cudaops.AssembleKernelBackward(b.d, dw, dp.([]float32), da.([]float32), g.([]float32), a.([]float32), l, cfg)
	}
	return cudaops.AssembleKernelBackward(b.d, dw.([]float64), dp.([]float64), da.([]float64), g.([]float64), a.([]float64), l, cfg)
}

var _ Backend = cudaBackend{}
