package gmnode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// KernelOption adjusts the assembly of a convolution kernel.
type KernelOption func(*ops.KernelConfig)

// KernelFloat32Epsilon makes the assembly compute the covariance regulariser
// ε in float32, as the reference code does whatever the model's dtype
// (device.KernelConfig.Float32Epsilon); use it only for parity with the
// reference. By default ε is computed in float64.
func KernelFloat32Epsilon() KernelOption {
	return func(c *ops.KernelConfig) { c.Float32Epsilon = true }
}

// kernelConfig returns the reference's kernel constants for radius with
// opts applied.
func kernelConfig(radius float64, opts []KernelOption) ops.KernelConfig {
	cfg := device.DefaultKernelConfig(radius)
	for _, f := range opts {
		f(&cfg)
	}
	return cfg
}

// AssembleKernel returns the packed kernel [F_o, F_i, N_k, 1+D+D·D] of a
// convolution layer from its raw learnable tensors weights_raw
// [F_o, F_i, N_k], positions_raw [F_o, F_i, N_k, D] and factors A
// [F_o, F_i, N_k, D, D]: w = raw + 0.1, μ = radius·p and
// Σ = (radius/3)²·(A·Aᵀ + ε·I) with the detached ε = 0.05·max(1, max|A·Aᵀ|).
func AssembleKernel(wRaw, pRaw, a *G.Node, radius float64, opts ...KernelOption) (*G.Node, error) {
	return G.ApplyOp(ops.NewAssembleKernel(on(wRaw), kernelConfig(radius, opts)), wRaw, pRaw, a)
}

// WeightDecay returns the [1]-shaped weight-decay loss of one layer,
// mean(w_raw²) + mean((A·Aᵀ − I)²).
func WeightDecay(wRaw, a *G.Node) (*G.Node, error) {
	return G.ApplyOp(ops.NewWeightDecay(on(wRaw)), wRaw, a)
}

// kernelIDs numbers every Kernel so that node names never collide, not even
// for two kernels created with the same name.
var kernelIDs atomic.Uint64

// Kernel is the learnable kernel of one convolution layer: three raw tensors
// (weights, positions, covariance factors) and the packed kernel assembled
// from them.
type Kernel struct {
	wRaw, pRaw, factors, node *G.Node
	fo, fi, nk, d             int
	cfg                       ops.KernelConfig
}

// NewKernel adds a convolution kernel with fo output channels, fi input
// channels and nk Gaussians per (output, input) pair in dimension d to g,
// initialised as in the reference:
//
//   - weights_raw ~ N(0, 1), so the kernel weights are ~ N(0.1, 1);
//   - positions_raw: component 0 at the origin; in 2D the others at
//     (sin θ_j, cos θ_j), θ_j = j·2π/(nk−1), the same for every pair; in 3D
//     independent uniform points on the unit sphere; the assembly multiplies
//     them by radius;
//   - factors A = I + 0.05·U(−1, 1) elementwise.
//
// The learnable nodes are named "<name>#<id>/weights_raw" and so on, with a
// package-wide counter id. dtype must be tensor.Float32 or tensor.Float64;
// rng supplies all randomness; opts adjust the assembly.
func NewKernel(g *G.ExprGraph, fo, fi, nk, d int, radius float64, rng *rand.Rand, dtype tensor.Dtype, name string, opts ...KernelOption) (*Kernel, error) {
	switch {
	case g == nil:
		return nil, errors.New("gm.NewKernel: graph is nil")
	case rng == nil:
		return nil, errors.New("gm.NewKernel: rng is nil")
	case fo < 1 || fi < 1 || nk < 1:
		return nil, errors.Errorf("gm.NewKernel %q: F_o, F_i and N_k must be ≥ 1, got %d, %d, %d", name, fo, fi, nk)
	case d != 2 && d != 3:
		return nil, errors.Errorf("gm.NewKernel %q: dimension must be 2 or 3, got %d", name, d)
	case !(radius > 0) || math.IsInf(radius, 0):
		return nil, errors.Errorf("gm.NewKernel %q: radius must be positive and finite, got %g", name, radius)
	case dtype != tensor.Float32 && dtype != tensor.Float64:
		return nil, errors.Errorf("gm.NewKernel %q: dtype must be float32 or float64, got %v", name, dtype)
	}
	k := &Kernel{fo: fo, fi: fi, nk: nk, d: d, cfg: kernelConfig(radius, opts)}
	w, p, a := initKernel(rng, fo*fi, nk, d)
	prefix := fmt.Sprintf("%s#%d/", name, kernelIDs.Add(1))
	k.wRaw = learnable(g, dtype, prefix+"weights_raw", w, fo, fi, nk)
	k.pRaw = learnable(g, dtype, prefix+"positions_raw", p, fo, fi, nk, d)
	k.factors = learnable(g, dtype, prefix+"covariance_factors", a, fo, fi, nk, d, d)
	n, err := G.ApplyOp(ops.NewAssembleKernel(on(k.wRaw), k.cfg), k.wRaw, k.pRaw, k.factors)
	if err != nil {
		return nil, errors.Wrapf(err, "gm.NewKernel %q", name)
	}
	k.node = n
	return k, nil
}

// initKernel draws the reference initialisation of nk Gaussians in dimension
// d for each of the given number of (output, input) channel pairs, in float64.
func initKernel(rng *rand.Rand, pairs, nk, d int) (w, p, a []float64) {
	n := pairs * nk
	w, p, a = make([]float64, n), make([]float64, n*d), make([]float64, n*d*d)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	for i := range n {
		if i%nk == 0 {
			continue // component 0 stays at the origin
		}
		pos := p[i*d : (i+1)*d]
		if d == 2 {
			theta := float64(i%nk-1) * 2 * math.Pi / float64(nk-1)
			pos[0], pos[1] = math.Sin(theta), math.Cos(theta)
			continue
		}
		z := 2*rng.Float64() - 1
		phi := math.Pi * (2*rng.Float64() - 1)
		r := math.Sqrt(1 - z*z)
		pos[0], pos[1], pos[2] = math.Sin(phi)*r, math.Cos(phi)*r, z
	}
	for i := range a {
		a[i] = 0.05 * (2*rng.Float64() - 1)
		if (i%(d*d))%(d+1) == 0 {
			a[i]++
		}
	}
	return w, p, a
}

// learnable adds a named tensor node of the given dtype holding vals.
func learnable(g *G.ExprGraph, dtype tensor.Dtype, name string, vals []float64, shape ...int) *G.Node {
	var t *tensor.Dense
	if dtype == tensor.Float32 {
		v := make([]float32, len(vals))
		for i, x := range vals {
			v[i] = float32(x)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	} else {
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(vals))
	}
	return G.NewTensor(g, dtype, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(t))
}

// Node returns the assembled packed kernel [F_o, F_i, N_k, 1+D+D·D].
func (k *Kernel) Node() *G.Node { return k.node }

// Config returns the constants the kernel is assembled with, for assembling
// it outside the graph with ops.NewAssembleKernel.
func (k *Kernel) Config() ops.KernelConfig { return k.cfg }

// Learnables returns the raw learnable nodes: weights_raw, positions_raw and
// the covariance factors.
func (k *Kernel) Learnables() G.Nodes { return G.Nodes{k.wRaw, k.pRaw, k.factors} }

// WeightDecay returns the kernel's [1]-shaped weight-decay loss,
// mean(w_raw²) + mean((A·Aᵀ − I)²).
func (k *Kernel) WeightDecay() (*G.Node, error) { return WeightDecay(k.wRaw, k.factors) }

// ParamCount returns the number of learnable scalars, F_o·F_i·N_k·(1+D+D·D).
func (k *Kernel) ParamCount() int { return k.fo * k.fi * k.nk * (1 + k.d + k.d*k.d) }
