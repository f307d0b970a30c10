package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Config selects a GMCN. The zero values of the optional fields give the
// paper's choices: 5 kernel Gaussians, TreeHEM with T = 2, float32.
type Config struct {
	Layout          Layout
	D               int // spatial dimension, 2 or 3
	Classes         int // must equal the last block's channels unless DenseHead > 0
	Batch           int // fixed batch size of the graph
	KernelGaussians int // N_k, 5 if zero
	// Kernel adjusts every block's kernel assembly, e.g.
	// gmnode.KernelFloat32Epsilon() for parity with the reference.
	Kernel []gmnode.KernelOption
	// ReLUFit configures every block's dense ReLU fit; the zero value is
	// the reference's heuristic, ops.ReLUFitOptions{Refine: true} the
	// refined fit (docs/fitting-error.md).
	ReLUFit ops.ReLUFitOptions
	// Reduction is the blocks' reduction; gmnode.UseTreeHEM with
	// gmnode.TreeHEMReferenceUnderFill() reproduces the reference's.
	Reduction gmnode.Reduction
	// DenseHead > 0 adds a fully connected layer of that many hidden units
	// (ReLU) and a linear classifier after the BatchNorm of the integrals.
	DenseHead int
	// Fused > 0 replaces each block's Conv, whose output has Fi·Ni·N_k
	// Gaussians per channel, by the fused convolution-fitting to
	// n = min(max(Fused·N_p, FusedMin), Fi·Ni·N_k) Gaussians (N_p: the
	// block's reduced count, or its input count Ni in the last block;
	// FusedGaussians); the dense ReLU fit and the reduction then work on n
	// instead of Fi·Ni·N_k Gaussians. 0 keeps the reference's path.
	Fused int
	// FusedExact makes each fused block's dense ReLU fit evaluate its
	// targets on the exact convolution at the n centroids of ConvFit's
	// coarse mixture (O(n·Fi·Ni·N_k) per channel) instead of on the coarse
	// mixture itself: in the block op as near-group targets of radius ∞
	// (on the CUDA device in its memory), through gmnode.ConvAt where the
	// block is built op by op (with Bias, or a reduction without a block
	// op). It has no effect without Fused or where n is the whole
	// convolution.
	FusedExact bool
	// FusedNear gives each fused block's dense ReLU fit near-group targets
	// of radius FusedNearRadius ≥ 0 (ops.BlockSpec.NearTargets,
	// docs/fused.md): at each centroid the coarse mixture's value, made
	// exact over the components of its own group (radius 0) and of the
	// groups within that Mahalanobis distance of it. It needs the block op
	// (no Bias, a reduction with a block: TreeHEM to at least T, MEM or
	// keep-largest) and excludes FusedExact; it has no effect where a block
	// fits its whole convolution.
	FusedNear       bool
	FusedNearRadius float64
	// FusedNegative is the fused selection's priority factor of groups of
	// negative weights (ops.ConvFitSelect.Negative); 0 means
	// ops.DefaultConvFitNegative. Runs saved before it existed used 1.
	FusedNegative float64
	// FusedMin is the least component count of a fused block:
	// n = min(max(Fused·N_p, FusedMin), Fi·Ni·N_k). 0 means DefaultFusedMin;
	// 1 gives min(Fused·N_p, Fi·Ni·N_k), the count of runs saved before it
	// existed.
	FusedMin int
	// Bias selects learnable biases in the mixtures' constants before every
	// ReLU fit (see BiasType); the zero value BiasNone is the reference's
	// default model, without constants.
	Bias  BiasType
	Dtype tensor.Dtype // tensor.Float32 if nil
	Seed  uint64
	// Device is where the model's GM ops compute (ops.OpenDevice); nil
	// is the CPU. Two models of one program may use two devices.
	Device *device.Device
}

// Model is a GMCN as one Gorgonia graph.
type Model struct {
	Config Config
	Graph  *G.ExprGraph
	// Input holds a batch of mixtures [B, C_in, N_in, 1+D+D²]; Target the
	// one-hot labels [B, classes].
	Input, Target *G.Node
	// LogProb [B, classes] and the mean NLL Loss.
	LogProb, Loss *G.Node

	// Kernels are the blocks' convolution kernels, in block order.
	Kernels []*gmnode.Kernel
	// Gain is the learnable [1] gain of the input weight standardisation.
	Gain *G.Node
	// BNScale and BNBias are the [1, C] affine parameters of the BatchNorm
	// of the integrals (C the last block's channels), and BN is its op. The
	// model sets BN's mode and running statistics before every run of the
	// graph, from its own copies: change them with SetTraining, SetBNStats
	// and SetState, never on BN itself.
	BNScale, BNBias *G.Node
	BN              *G.BatchNormOp
	// DenseW and DenseB are the dense head's weights and biases, per layer;
	// empty without a dense head.
	DenseW, DenseB G.Nodes
	// CovNorms are the blocks' running-average CovScaleNorm ops, in block
	// order; a last block that integrates its own mixtures (a gm.Block op
	// with Integrate) has none.
	CovNorms []*ops.CovScaleNorm
	// Biases are the blocks' [1, F_o] biases of the constants, in block
	// order; empty with BiasNone.
	Biases G.Nodes

	logProb  G.Value
	integral G.Value
	rows     []string

	// training is the model's mode and bnMean, bnVar BatchNorm's running
	// statistics, in the model's dtype; mode.go says why the model keeps
	// them rather than the op.
	training      bool
	bnMean, bnVar *tensor.Dense
}

// Build constructs the graph of cfg.
func Build(cfg Config) (*Model, error) {
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	l := cfg.Layout
	g := G.NewGraph()
	if cfg.Device != nil {
		if err := gmnode.SetDevice(g, cfg.Device); err != nil {
			return nil, errors.Wrap(err, "model")
		}
	}
	m := &Model{Config: cfg, Graph: g, training: true}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	p := mixture.PackedLen(cfg.D)
	m.Input = G.NewTensor(g, cfg.Dtype, 4, G.WithShape(cfg.Batch, l.InputChannels, l.InputGaussians, p), G.WithName("input"))
	m.Target = G.NewTensor(g, cfg.Dtype, 2, G.WithShape(cfg.Batch, cfg.Classes), G.WithName("target"))
	m.Gain = G.NewTensor(g, cfg.Dtype, 1, G.WithShape(1), G.WithName("input_gain"), G.WithInit(G.Ones()))
	m.row("input", m.Input)

	x, err := m.withModeHook(m.Input)
	if err != nil {
		return nil, errors.Wrap(err, "model mode")
	}
	if x, err = gmnode.CovScale(x); err != nil {
		return nil, errors.Wrap(err, "input normalisation")
	}
	if x, err = gmnode.Standardise(x, m.Gain); err != nil {
		return nil, errors.Wrap(err, "input normalisation")
	}
	fi := l.InputChannels
	var kappa *G.Node // the mixtures' constants [B, C], nil with BiasNone
	if cfg.Bias != BiasNone {
		kappa = zeroConstants(cfg.Dtype, cfg.Batch, fi)
	}
	for i, b := range l.Blocks {
		name := fmt.Sprintf("conv%d", i+1)
		k, err := gmnode.NewKernel(g, b.Channels, fi, cfg.KernelGaussians, cfg.D, b.Radius, rng, cfg.Dtype, name, cfg.Kernel...)
		if err != nil {
			return nil, errors.Wrap(err, name)
		}
		m.Kernels = append(m.Kernels, k)
		n, nv := cfg.FusedGaussians(b, fi, x.Shape()[2]), fi*x.Shape()[2]*cfg.KernelGaussians
		exact := cfg.Fused > 0 && cfg.FusedExact && n < nv
		if spec, ok := cfg.Reduction.BlockSpec(b.Gaussians); ok && kappa == nil {
			// The last block integrates its own mixtures, so that they
			// stay where they are made; its CovScaleNorm, which scales
			// only covariances, would change neither the integrals nor
			// their gradients.
			spec.Integrate = i == len(l.Blocks)-1
			near, r := cfg.FusedNear && n < nv, cfg.FusedNearRadius
			if exact {
				// The exact targets are the near-group targets of
				// radius ∞, which the block op computes in one pass
				// over the convolution's components.
				near, r = true, math.Inf(1)
			}
			x, err = m.block(x, k, spec, n, near, r, name)
		} else {
			x, kappa, err = m.composedBlock(x, k, b, fi, n, exact, kappa, name)
		}
		if err != nil {
			return nil, errors.Wrapf(err, "block %d", i+1)
		}
		if x.Shape().Dims() == 2 {
			m.row(fmt.Sprintf("block %d (ReLU fit, reduce, integrate)", i+1), x)
			break
		}
		var cn *ops.CovScaleNorm
		if x, cn, err = gmnode.CovScaleNorm(x); err != nil {
			return nil, errors.Wrapf(err, "block %d normalisation", i+1)
		}
		m.CovNorms = append(m.CovNorms, cn)
		m.row(fmt.Sprintf("block %d (ReLU fit, reduce, cov-norm)", i+1), x)
		fi = b.Channels
	}
	y := x
	if !m.lastIntegrates() {
		if y, err = gmnode.Integrate(x); err != nil {
			return nil, err
		}
		m.row("integrate", y)
	}
	G.Read(y, &m.integral)
	if y, err = m.batchNorm(y); err != nil {
		return nil, err
	}
	if cfg.DenseHead > 0 {
		if y, err = m.denseHead(y, rng); err != nil {
			return nil, err
		}
	}
	if m.LogProb, err = G.LogSoftMax(y); err != nil {
		return nil, errors.Wrap(err, "log-softmax")
	}
	m.row("log-softmax", m.LogProb)
	// The tape may compute later ops in the log-probabilities' memory, so
	// their value is copied out right after they are computed.
	G.Read(m.LogProb, &m.logProb)
	nll, err := G.Sum(G.Must(G.HadamardProd(m.LogProb, m.Target)), 1)
	if err != nil {
		return nil, errors.Wrap(err, "NLL")
	}
	if m.Loss, err = G.Neg(G.Must(G.Mean(nll))); err != nil {
		return nil, errors.Wrap(err, "NLL")
	}
	return m, nil
}

func (cfg *Config) normalise() error {
	if cfg.KernelGaussians == 0 {
		cfg.KernelGaussians = 5
	}
	if cfg.Dtype == (tensor.Dtype{}) {
		cfg.Dtype = tensor.Float32
	}
	if cfg.Reduction.IsZero() {
		cfg.Reduction = gmnode.UseTreeHEM(2)
	}
	l := cfg.Layout
	switch {
	case cfg.D != 2 && cfg.D != 3:
		return errors.Errorf("model: dimension D must be 2 or 3, got %d", cfg.D)
	case len(l.Blocks) == 0:
		return errors.Errorf("model: layout %q has no blocks", l)
	case cfg.Batch < 1:
		return errors.Errorf("model: batch size must be ≥ 1, got %d", cfg.Batch)
	case cfg.Classes < 2:
		return errors.Errorf("model: need at least 2 classes, got %d", cfg.Classes)
	case cfg.DenseHead == 0 && l.Classes() != cfg.Classes:
		return errors.Errorf("model: the last block has %d channels but there are %d classes (add a dense head or change the layout)", l.Classes(), cfg.Classes)
	case cfg.DenseHead < 0:
		return errors.Errorf("model: dense head size must be ≥ 0, got %d", cfg.DenseHead)
	case cfg.Fused < 0:
		return errors.Errorf("model: the fused factor must be ≥ 0 (0: unfused), got %d", cfg.Fused)
	case cfg.FusedMin < 0:
		return errors.Errorf("model: the least fused component count must be ≥ 1 (0: the default %d), got %d", DefaultFusedMin, cfg.FusedMin)
	case cfg.FusedNegative < 0 || math.IsNaN(cfg.FusedNegative) || math.IsInf(cfg.FusedNegative, 1):
		return errors.Errorf("model: the fused priority factor of negative groups must be a finite number > 0 (0: the default %g), got %g", ops.DefaultConvFitNegative, cfg.FusedNegative)
	case cfg.Bias < BiasNone || cfg.Bias > BiasNegativeSoftplus:
		return errors.Errorf("model: unknown bias type %v", cfg.Bias)
	}
	return cfg.checkNear()
}

// Check reports, before any graph is built or data loaded, a configuration
// Build would refuse: the settings normalise checks, and a block whose
// reduction cannot take its Fi·Ni·N_k Gaussians (the fused count with
// Fused > 0) to its N_p, as the op would say when the graph is built.
func (cfg Config) Check() error {
	if err := cfg.normalise(); err != nil {
		return err
	}
	fi, ni := cfg.Layout.InputChannels, cfg.Layout.InputGaussians
	for i, b := range cfg.Layout.Blocks {
		n := fi * ni * cfg.KernelGaussians
		if cfg.Fused > 0 {
			n = cfg.FusedGaussians(b, fi, ni)
		}
		ni = n
		if b.Gaussians >= 1 {
			if err := cfg.Reduction.Check(n, b.Gaussians, cfg.D); err != nil {
				return errors.Wrapf(err, "model: block %d reduces %d Gaussians per channel to %d with %v", i+1, n, b.Gaussians, cfg.Reduction)
			}
			ni = b.Gaussians
		}
		fi = b.Channels
	}
	return nil
}

// checkNear reports near-group targets (FusedNear) the model cannot
// compute, naming the setting in the way; nil without them or where they
// apply.
func (cfg Config) checkNear() error {
	r := cfg.FusedNearRadius
	switch {
	case !cfg.FusedNear && r != 0:
		return errors.Errorf("model: near-group radius %g without near-group targets", r)
	case !cfg.FusedNear:
		return nil
	case !(r >= 0):
		return errors.Errorf("model: near-group targets' radius %g, want a number ≥ 0", r)
	case cfg.Fused == 0:
		return errors.New("model: near-group targets need the fused convolution-fitting")
	case cfg.FusedExact:
		return errors.New("model: a fused block's targets are either exact or near-group, not both")
	case cfg.Bias != BiasNone:
		return errors.Errorf("model: near-group targets cannot take biases (%v): only the block op computes them, and it has no constants", cfg.Bias)
	}
	for i, b := range cfg.Layout.Blocks {
		if _, ok := cfg.Reduction.BlockSpec(b.Gaussians); !ok {
			return errors.Errorf("model: near-group targets need a reduction the block op computes (TreeHEM to at least T Gaussians, MEM or keep-largest); block %d reduces with %v", i+1, cfg.Reduction)
		}
	}
	return nil
}

// fusedNegative returns FusedNegative, or the default for 0.
func (cfg Config) fusedNegative() float64 {
	if cfg.FusedNegative == 0 {
		return ops.DefaultConvFitNegative
	}
	return cfg.FusedNegative
}

// DefaultFusedMin is the least component count of a fused block when
// Config.FusedMin is 0. Fused·N_p alone gives the blocks that reduce to a
// few Gaussians few groups (64 for N_p = 4 at Fused = 16), and the ReLU fit
// sees the convolution only through them; the floor costs little where
// Fused·N_p is large already, which is where the fused path saves most
// (docs/fused.md, "The floor").
const DefaultFusedMin = 96

// fusedMin returns FusedMin, or the default for 0.
// FusedKey describes the fused settings that change what the model
// computes (F, the targets, the negative groups' priority factor and the
// least count, defaults resolved), or is "" for an unfused model: a
// checkpoint's configuration key holds it, so that a run is not resumed
// with other fused settings.
func (cfg Config) FusedKey() string {
	if cfg.Fused == 0 {
		return ""
	}
	targets := "coarse"
	switch {
	case cfg.FusedExact:
		targets = "exact"
	case cfg.FusedNear:
		targets = fmt.Sprintf("near%g", cfg.FusedNearRadius)
	}
	return fmt.Sprintf("fused%d targets %s negative%g min%d", cfg.Fused, targets, cfg.fusedNegative(), cfg.fusedMin())
}

func (cfg Config) fusedMin() int {
	if cfg.FusedMin == 0 {
		return DefaultFusedMin
	}
	return cfg.FusedMin
}

// block applies block b (convolution, ÷Fi, ReLU fit and reduction, spec
// holding the reduction) to x as one gm.Block op, which equals the ops of
// composedBlock (but for near-group targets, which only the block op
// computes) and keeps its intermediates where they are made (on the CUDA
// device in its memory). n is the fused count; near gives the block
// near-group targets of radius r (∞: the exact targets).
func (m *Model) block(x *G.Node, k *gmnode.Kernel, spec ops.BlockSpec, n int, near bool, r float64, name string) (*G.Node, error) {
	cfg := m.Config
	spec.ReLU = cfg.ReLUFit
	stage := " (conv ÷ Fi)"
	if cfg.Fused > 0 {
		spec.Fit = ops.ConvFitSelect{N: n, Negative: cfg.fusedNegative()}
		stage = fmt.Sprintf(" (fused conv-fit to %d ÷ Fi)", n)
		if near {
			spec.NearTargets, spec.Near = true, r
			stage = fmt.Sprintf(" (fused conv-fit to %d ÷ Fi, near r=%g)", n, r)
			if math.IsInf(r, 1) {
				stage = fmt.Sprintf(" (fused conv-fit to %d ÷ Fi, exact targets)", n)
			}
		}
	}
	lx, err := mixture.LayoutOf(x.Shape())
	if err != nil {
		return nil, errors.Wrap(err, name)
	}
	ks := k.Node().Shape()
	lk := mixture.Layout{B: ks[0], C: ks[1], N: ks[2], D: cfg.D}
	// The convolution's shape, which no node of the graph holds.
	m.rows = append(m.rows, fmt.Sprintf("%-40s %v", name+stage, tensor.Shape(spec.ConvLayout(lx, lk).Shape())))
	return gmnode.Block(x, k.Node(), spec)
}

// composedBlock applies block b to x op by op: the convolution (or fused
// convolution-fitting, with exact targets if exact), ÷Fi, the ReLU fit
// (with the constants kappa unless nil) and the reduction. It returns the
// block's output and the new constants.
func (m *Model) composedBlock(x *G.Node, k *gmnode.Kernel, b Block, fi, n int, exact bool, kappa *G.Node, name string) (*G.Node, *G.Node, error) {
	cfg := m.Config
	stage := " (conv ÷ Fi)"
	var targets *G.Node // the ReLU fit's targets, nil: from x itself
	var err error
	switch {
	case exact:
		x, targets, err = gmnode.ConvFitTargets(x, k.Node(), n, 1/float64(fi), gmnode.ConvFitNegative(cfg.fusedNegative()))
		stage = fmt.Sprintf(" (fused conv-fit to %d ÷ Fi, exact targets)", n)
	case cfg.Fused > 0:
		x, err = gmnode.ConvFit(x, k.Node(), n, gmnode.ConvFitNegative(cfg.fusedNegative()))
		stage = fmt.Sprintf(" (fused conv-fit to %d ÷ Fi)", n)
	default:
		x, err = gmnode.Conv(x, k.Node())
	}
	if err == nil && targets == nil {
		x, err = gmnode.ScaleWeights(x, 1/float64(fi))
	}
	if err != nil {
		return nil, nil, errors.Wrap(err, name)
	}
	m.row(name+stage, x)
	fit := []gmnode.ReduceOption{gmnode.WithReLUFitOptions(cfg.ReLUFit)}
	if targets != nil {
		fit = append(fit, gmnode.WithTargets(targets))
	}
	if kappa != nil {
		if kappa, err = m.constant(kappa, k.Node(), fi, b.Channels, name); err != nil {
			return nil, nil, errors.Wrap(err, name)
		}
		m.row(name+" constant (÷ Fi, bias)", kappa)
		// The fit replaces kappa by its new constants κ⁺, which the
		// reduction and CovScaleNorm keep.
		fit = append(fit, gmnode.WithConstant(kappa, &kappa))
	}
	x, err = gmnode.ReLUFitReduce(x, b.Gaussians, cfg.Reduction, fit...)
	return x, kappa, errors.Wrap(err, "fitting")
}

// FusedGaussians returns the component count n of block b's fused
// convolution-fitting for fi input channels of ni Gaussians: Fused times
// the block's reduced count (its input count in the last block), at least
// FusedMin (see DefaultFusedMin) and at most the Fi·Ni·N_k Gaussians of the
// unfused convolution, beyond which fusing only pads.
func (cfg Config) FusedGaussians(b Block, fi, ni int) int {
	np := b.Gaussians
	if np < 1 {
		np = ni
	}
	return min(max(cfg.Fused*np, cfg.fusedMin()), fi*ni*cfg.KernelGaussians)
}

// batchNorm applies Gorgonia's BatchNorm to the integrals [B, C] with
// learnable [1, C] scale and bias (PyTorch's momentum 0.1 and ε 1e-5).
func (m *Model) batchNorm(y *G.Node) (*G.Node, error) {
	c := y.Shape()[1]
	m.BNScale = G.NewTensor(m.Graph, m.Config.Dtype, 2, G.WithShape(1, c), G.WithName("bn_scale"), G.WithInit(G.Ones()))
	m.BNBias = G.NewTensor(m.Graph, m.Config.Dtype, 2, G.WithShape(1, c), G.WithName("bn_bias"), G.WithInit(G.Zeroes()))
	out, _, _, op, err := G.BatchNorm(y, m.BNScale, m.BNBias, 0.1, 1e-5)
	if err != nil {
		return nil, errors.Wrap(err, "batch norm")
	}
	m.BN = op
	// PyTorch's initial statistics, which BatchNormOp also resets to.
	m.bnMean = tensor.New(tensor.WithShape(c), tensor.Of(m.Config.Dtype))
	m.bnVar = tensor.New(tensor.WithShape(c), tensor.Of(m.Config.Dtype))
	if err := m.bnVar.Memset(gmnode.Scalar(m.Config.Dtype, 1)); err != nil {
		return nil, errors.Wrap(err, "batch norm statistics")
	}
	if err := m.addStatsHook(out); err != nil {
		return nil, errors.Wrap(err, "batch norm statistics")
	}
	m.row("batch norm", out)
	return out, nil
}

// constant adds block name's bias [1, fo] to the model and returns the
// constants its ReLU fit sees, from the carried constants kappa and the
// block's kernels (blockConstant).
func (m *Model) constant(kappa, kernels *G.Node, fi, fo int, name string) (*G.Node, error) {
	dt := m.Config.Dtype
	bias := G.NewTensor(m.Graph, dt, 2, G.WithShape(1, fo), G.WithName(name+"_bias"),
		G.WithInit(G.ValuesOf(gmnode.Scalar(dt, m.Config.Bias.initial()))))
	m.Biases = append(m.Biases, bias)
	return blockConstant(kappa, kernels, bias, fi, m.Config.Bias)
}

// denseHead adds Linear(C → H) → ReLU → Linear(H → classes).
func (m *Model) denseHead(y *G.Node, rng *rand.Rand) (*G.Node, error) {
	in, h, k := y.Shape()[1], m.Config.DenseHead, m.Config.Classes
	var err error
	for i, sz := range [][2]int{{in, h}, {h, k}} {
		w := G.NewMatrix(m.Graph, m.Config.Dtype, G.WithShape(sz[0], sz[1]), G.WithName(fmt.Sprintf("dense%d_w", i+1)),
			G.WithValue(heInit(rng, m.Config.Dtype, sz[0], sz[1])))
		b := G.NewTensor(m.Graph, m.Config.Dtype, 2, G.WithShape(1, sz[1]), G.WithName(fmt.Sprintf("dense%d_b", i+1)), G.WithInit(G.Zeroes()))
		m.DenseW, m.DenseB = append(m.DenseW, w), append(m.DenseB, b)
		if y, err = G.Mul(y, w); err != nil {
			return nil, errors.Wrap(err, "dense head")
		}
		if y, err = G.BroadcastAdd(y, b, nil, []byte{0}); err != nil {
			return nil, errors.Wrap(err, "dense head")
		}
		if i == 0 {
			if y, err = G.Rectify(y); err != nil {
				return nil, errors.Wrap(err, "dense head")
			}
		}
		m.row(fmt.Sprintf("dense %d", i+1), y)
	}
	return y, nil
}

func heInit(rng *rand.Rand, dt tensor.Dtype, in, out int) *tensor.Dense {
	sd := math.Sqrt(2 / float64(in))
	v := make([]float64, in*out)
	for i := range v {
		v[i] = rng.NormFloat64() * sd
	}
	if dt == tensor.Float64 {
		return tensor.New(tensor.WithShape(in, out), tensor.WithBacking(v))
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensor.New(tensor.WithShape(in, out), tensor.WithBacking(f))
}

// Learnables returns every trained parameter: kernel raws, the input gain,
// the BatchNorm affine parameters, the dense head and the biases of the
// constants. The biases come last, so a model without them has the
// parameters, and the checkpoints, of a model built before they existed.
func (m *Model) Learnables() G.Nodes {
	var ns G.Nodes
	for _, k := range m.Kernels {
		ns = append(ns, k.Learnables()...)
	}
	ns = append(ns, m.Gain, m.BNScale, m.BNBias)
	for i := range m.DenseW {
		ns = append(ns, m.DenseW[i], m.DenseB[i])
	}
	return append(ns, m.Biases...)
}

// ParamCount returns the number of GM parameters as the paper counts them
// (kernel parameters plus the input gain) and the total number of trained
// parameters (adding BatchNorm's affine parameters and the dense head).
func (m *Model) ParamCount() (paper, total int) {
	paper = m.Config.Layout.KernelParams(m.Config.KernelGaussians, m.Config.D) + 1
	for _, n := range m.Learnables() {
		total += n.Shape().TotalSize()
	}
	return paper, total
}

// SetTraining switches BatchNorm and every CovScaleNorm between training
// (batch statistics, running averages updated) and evaluation (running
// statistics only read). A new model is in training mode. The mode and
// BatchNorm's statistics are the model's: every run of the graph starts by
// applying them, so it does not matter whether a machine was made before or
// after SetTraining or SetState, nor whether it was made with EvalMode.
func (m *Model) SetTraining(on bool) error {
	m.training = on
	return m.applyMode()
}

// Training reports whether the model is in training mode.
func (m *Model) Training() bool { return m.training }

// lastIntegrates reports whether the last block integrates its own mixtures
// (and so has no CovScaleNorm).
func (m *Model) lastIntegrates() bool { return len(m.CovNorms) < len(m.Config.Layout.Blocks) }

func (m *Model) row(name string, n *G.Node) {
	m.rows = append(m.rows, fmt.Sprintf("%-40s %v", name, n.Shape()))
}

// Table returns the layer table: every stage with its output shape, then
// the parameter counts.
func (m *Model) Table() string {
	var sb strings.Builder
	fused := "unfused"
	if m.Config.Fused > 0 {
		fused = fmt.Sprintf("fused ×%d", m.Config.Fused)
		if m.Config.FusedExact {
			fused += " (exact targets)"
		}
		if m.Config.FusedNear {
			fused += fmt.Sprintf(" (near-group targets, r = %g)", m.Config.FusedNearRadius)
		}
		if f := m.Config.fusedNegative(); f != ops.DefaultConvFitNegative {
			fused += fmt.Sprintf(" (negative groups ×%g)", f)
		}
		if n := m.Config.fusedMin(); n != DefaultFusedMin {
			fused += fmt.Sprintf(" (at least %d Gaussians)", n)
		}
	}
	bias := ""
	if m.Config.Bias != BiasNone {
		bias = ", bias " + m.Config.Bias.String()
	}
	fmt.Fprintf(&sb, "GMCN %s  (D=%d, N_k=%d, %s, %s%s, batch %d, %v)\n", m.Config.Layout, m.Config.D, m.Config.KernelGaussians, fused, m.Config.Reduction, bias, m.Config.Batch, m.Config.Dtype)
	for _, r := range m.rows {
		sb.WriteString("  " + r + "\n")
	}
	paper, total := m.ParamCount()
	fmt.Fprintf(&sb, "parameters: %d GM (kernels + input gain, as the paper counts), %d trained in total\n", paper, total)
	return sb.String()
}

// LogProbValue returns the log-probabilities [B, classes] of the last run.
func (m *Model) LogProbValue() G.Value { return m.logProb }

// IntegralValue returns the integrals [B, C] of the last run: the input of
// BatchNorm.
func (m *Model) IntegralValue() G.Value { return m.integral }

// SetBNStats sets BatchNorm's running mean and variance.
func (m *Model) SetBNStats(mean, variance []float64) error {
	n := m.bnMean.Shape().TotalSize()
	if len(mean) != n || len(variance) != n {
		return errors.Errorf("batch norm statistics: %d/%d values, want %d", len(mean), len(variance), n)
	}
	SetFloat64s(m.bnMean, mean)
	SetFloat64s(m.bnVar, variance)
	return m.applyMode()
}
