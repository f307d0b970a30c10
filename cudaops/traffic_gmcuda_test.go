//go:build gmcuda

package cudaops_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gmcn-go/gmcn/cudaops"
	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/cpu"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// blockShape is one GMCN block: data [B, Fi, Ni] convolved with kernels
// [Fo, Fi, Nk], then ÷Fi, the ReLU fit and TreeHEM to Np Gaussians.
type blockShape struct{ b, fi, ni, fo, nk, np, d int }

// blockTraffic is what one forward+backward of the block moves across the
// bus as separate ops, in values of the element type, term by term: every
// GPU computation uploads its inputs and downloads its result, and the
// computation without a GPU kernel (÷Fi) runs on the CPU fallback and moves
// nothing. The machine runs gmnode.Grad's subgraph, so the data, which
// nothing learns, gets no gradient, and the kernel assembly's three grad
// nodes share one backward computation. dense counts the terms of
// F_i·N_i·N_k Gaussians per mixture (the convolution's output, the ReLU
// fit's, which TreeHEM's forward and backward upload again, and their
// gradients), the ones the GPU-resident block must keep on the device.
func blockTraffic(s blockShape) (h2d, d2h, dense, launches int) {
	S := 1 + s.d + s.d*s.d
	x := s.b * s.fi * s.ni * S               // the data
	k := s.fo * s.fi * s.nk * S              // the assembled kernels
	y := s.b * s.fo * s.fi * s.ni * s.nk * S // the convolution's output
	z := s.b * s.fo * s.np * S               // the block's output
	w, p, a := s.fo*s.fi*s.nk, s.fo*s.fi*s.nk*s.d, s.fo*s.fi*s.nk*s.d*s.d
	h2d = a + (w + p + a) + // KernelEpsilon, AssembleKernel
		(x + k) + // Conv
		y + // ReLUFit
		y + // TreeHEM
		(y + z) + // TreeHEMBackward: x and g
		2*y + // ReLUFitBackward: x and g
		(y + x) + // ConvBackwardKernels: g and x
		(k + a) // AssembleKernelBackward, once for the three raw inputs: g and a
	d2h = k + // AssembleKernel
		y + // Conv
		y + // ReLUFit
		z + // TreeHEM
		y + // TreeHEMBackward
		y + // ReLUFitBackward
		k + // ConvBackwardKernels
		(w + p + a) // AssembleKernelBackward
	dense = 10 * y
	// gram max, assembly, conv, ReLU fit, TreeHEM, their backward (2 + 1),
	// conv backward, assembly backward.
	return h2d, d2h, dense, 10
}

// blockOpTraffic is what one forward+backward of the same block as one
// gm.Block op moves: its inputs and output, the incoming gradient and the
// kernels' gradient, nothing of F_i·N_i·N_k Gaussians. The op's gradient
// node runs the block's backward from the forward's inputs and
// intermediates, which its saved state keeps on the device, so only the
// incoming gradient goes up.
func blockOpTraffic(s blockShape) (h2d, d2h, dense, launches int) {
	S := 1 + s.d + s.d*s.d
	x := s.b * s.fi * s.ni * S
	k := s.fo * s.fi * s.nk * S
	z := s.b * s.fo * s.np * S
	w, p, a := s.fo*s.fi*s.nk, s.fo*s.fi*s.nk*s.d, s.fo*s.fi*s.nk*s.d*s.d
	h2d = a + (w + p + a) + // KernelEpsilon, AssembleKernel
		(x + k) + // Block
		z + // BlockBackward for ∂L/∂k: g
		(k + a) // AssembleKernelBackward
	d2h = k + // AssembleKernel
		z + // Block
		k + // BlockBackward
		(w + p + a) // AssembleKernelBackward
	// gram max, assembly; the block's conv, ÷Fi, ReLU fit, TreeHEM; its
	// backward: TreeHEM's, the ReLU fit's (2), ÷Fi and the convolution's;
	// assembly backward.
	return h2d, d2h, 0, 2 + 4 + 5 + 1
}

// blockIntegrateTraffic is blockOpTraffic for the block that integrates its
// mixtures (a model's last): B·Fo integrals cross where the mixtures did,
// and the integration and its backward add a launch each.
func blockIntegrateTraffic(s blockShape) (h2d, d2h, dense, launches int) {
	h2d, d2h, dense, launches = blockOpTraffic(s)
	z, i := s.b*s.fo*s.np*(1+s.d+s.d*s.d), s.b*s.fo
	return h2d - z + i, d2h - z + i, dense, launches + 2
}

// blockExactTraffic is blockOpTraffic for a fused block with exact
// targets: the same bytes, since the convolution that the targets evaluate
// and its gradient stay on the device too, in 4 + 6 launches more: forward
// the convolution, its ÷Fi, the fitted positions and the evaluation there
// (besides ConvFit, which stands for the convolution); backward the
// evaluation's two gradients, the positions' part added to the fit's
// gradient, the convolution's gradient ÷Fi, ConvFit's backward and the sum
// of the two gradients of the convolution.
func blockExactTraffic(s blockShape) (h2d, d2h, dense, launches int) {
	h2d, d2h, dense, launches = blockOpTraffic(s)
	return h2d, d2h, dense, launches + 4 + 6
}

// TestBlockTraffic states the bytes one forward+backward of a GMCN block
// moves between host and device on the CUDA device, op by op and as one
// gm.Block op: the figure that keeping a block on the device shrinks.
// KernelEpsilon's float64 maximum adds 8 bytes each way.
func TestBlockTraffic(t *testing.T) {
	s := blockShape{b: 4, fi: 3, ni: 16, fo: 5, nk: 5, np: 8, d: 2}
	for _, c := range []struct {
		name    string
		traffic func(blockShape) (h2d, d2h, dense, launches int)
		block   func(x, k *G.Node) (*G.Node, error)
	}{
		{"ops", blockTraffic, func(x, k *G.Node) (*G.Node, error) {
			y, err := gmnode.Conv(x, k)
			if err == nil {
				y, err = gmnode.ScaleWeights(y, 1/float64(s.fi))
			}
			if err == nil {
				y, err = gmnode.ReLUFitReduce(y, s.np, gmnode.UseTreeHEM(2))
			}
			return y, err
		}},
		{"gm.Block", blockOpTraffic, func(x, k *G.Node) (*G.Node, error) {
			spec, _ := gmnode.UseTreeHEM(2).BlockSpec(s.np)
			return gmnode.Block(x, k, spec)
		}},
		{"gm.Block integrating", blockIntegrateTraffic, func(x, k *G.Node) (*G.Node, error) {
			spec, _ := gmnode.UseTreeHEM(2).BlockSpec(s.np)
			spec.Integrate = true
			return gmnode.Block(x, k, spec)
		}},
		{"gm.Block fused, exact targets", blockExactTraffic, func(x, k *G.Node) (*G.Node, error) {
			spec, _ := gmnode.UseTreeHEM(2).BlockSpec(s.np)
			spec.Fit = ops.ConvFitSelect{N: 20, Negative: ops.DefaultConvFitNegative}
			spec.NearTargets, spec.Near = true, math.Inf(1)
			return gmnode.Block(x, k, spec)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := runBlockTraffic(t, s, c.block)
			h2d, d2h, dense, launches := c.traffic(s)
			const f32, eps = 4, 8
			want := cudaops.Traffic{HostToDevice: int64(h2d*f32 + eps), DeviceToHost: int64(d2h*f32 + eps), Launches: int64(launches)}
			if got != want {
				t.Errorf("a forward+backward of block %+v moved %+v, want %+v", s, got, want)
			}
			t.Logf("block %+v, float32: %d B to the device, %d B back in %d launches; %.0f %% of it tensors of Fi·Ni·Nk Gaussians per mixture",
				s, got.HostToDevice, got.DeviceToHost, got.Launches, 100*float64(dense*f32)/float64(got.HostToDevice+got.DeviceToHost))
			// The blocks of the paper's MNIST model (1/64 → 8/32 → 16/16 → 32/8 →
			// 64/4, N_k = 5) at batch 32, by the formula this test checks.
			for _, p := range []blockShape{{32, 1, 64, 8, 5, 32, 2}, {32, 8, 32, 16, 5, 16, 2}, {32, 16, 16, 32, 5, 8, 2}, {32, 32, 8, 64, 5, 4, 2}} {
				h2d, d2h, dense, _ := c.traffic(p)
				t.Logf("paper block Fi=%d Ni=%d Fo=%d, B=32, float32: %.1f MB to the device, %.1f MB back, %.0f %% Fi·Ni·Nk-sized",
					p.fi, p.ni, p.fo, float64(h2d*f32)/1e6, float64(d2h*f32)/1e6, 100*float64(dense)/float64(h2d+d2h))
			}
		})
	}
}

// runBlockTraffic runs one forward+backward of block on the CUDA device
// (data → block → Σ, kernels assembled from their raw learnables) and
// returns what it moved.
func runBlockTraffic(t *testing.T, s blockShape, block func(x, k *G.Node) (*G.Node, error)) cudaops.Traffic {
	t.Helper()
	dev, err := cudaops.Default()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	g := G.NewGraph()
	if err := gmnode.SetDevice(g, cudaops.NewDevice(dev, cpu.Device())); err != nil {
		t.Fatal(err)
	}
	lx := mixture.Layout{B: s.b, C: s.fi, N: s.ni, D: s.d}
	xv := gmtest.Mixtures[float32](rng, gmtest.Spec{WeightMin: 0.1, WeightMax: 1, Spread: 3, CovScale: 1, CovDiag: 0.2}, s.b, s.fi, s.ni, s.d)
	x := G.NewTensor(g, tensor.Float32, 4, G.WithName("x"), G.WithValue(tensor.New(tensor.WithShape(lx.Shape()...), tensor.WithBacking(xv))))
	k, err := gmnode.NewKernel(g, s.fo, s.fi, s.nk, s.d, 2.5, rng, tensor.Float32, "block")
	if err != nil {
		t.Fatal(err)
	}
	y, err := block(x, k.Node())
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Sum(y))
	step, _, err := gmnode.Grad(cost, k.Learnables()...)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(step, G.BindDualValues(k.Learnables()...))
	defer vm.Close()
	before := dev.Traffic()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	return dev.Traffic().Sub(before)
}
