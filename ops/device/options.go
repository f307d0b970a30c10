package device

import (
	"math"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Float is the element type of every computation: float32 or float64.
type Float = mixture.Float

// ReLUFitVariant selects the weight formulas of the dense ReLU fit. The
// formulas below are for a mixture with constant κ = 0 (see CoarseWeight
// for κ ≠ 0).
type ReLUFitVariant int

const (
	// ReLUFitReference is the authors' current code:
	// x_k = max(a_k, 0) + CoarseOffset and
	// a″_k = x_k·(max(t_k, 0) + Offset)/(e_k + Offset).
	ReLUFitReference ReLUFitVariant = iota
	// ReLUFitPaper is the paper's rule: x_k = a_k if a_k > 0 else Epsilon and
	// a″_k = x_k·max(t_k, 0)/e_k. Its weights are ≥ 0, not > 0: a centroid
	// where the target is not positive gets weight 0.
	ReLUFitPaper
)

// Default constants of ReLUFitOptions.
const (
	// DefaultReLUFitCoarseOffset is the reference code's +0.1 on the coarse
	// weights.
	DefaultReLUFitCoarseOffset = 0.1
	// DefaultReLUFitOffset is the reference code's +0.05 in the numerator and
	// the denominator.
	DefaultReLUFitOffset = 0.05
	// DefaultReLUFitEpsilon is our choice for the paper variant's ε; the paper
	// gives no value.
	DefaultReLUFitEpsilon = 1e-3
)

// ErrRefinedTargets reports a refined ReLU fit asked to fit given targets:
// the refinement evaluates its target away from the centroids, where given
// targets say nothing.
var ErrRefinedTargets = errors.New("the refined ReLU fit evaluates its target away from the centroids and cannot take given targets")

// ReLUFitOptions configures the dense ReLU fit. The zero value is the
// reference variant with its constants: a field left at zero takes its
// default (DefaultReLUFitCoarseOffset, DefaultReLUFitOffset,
// DefaultReLUFitEpsilon), so a constant cannot be set to exactly zero, which
// would allow zero or undefined weights. Negative or non-finite constants are
// rejected by Resolve.
//
// The mixtures' constants κ are data, not options: the Kernels methods take
// them beside the mixtures.
type ReLUFitOptions struct {
	// Variant selects the formulas; the zero value is ReLUFitReference.
	Variant ReLUFitVariant
	// CoarseOffset is added to every clamped weight in the reference variant.
	CoarseOffset float64
	// Offset is added to the numerator and the denominator of the weight
	// ratio in the reference variant.
	Offset float64
	// Epsilon replaces non-positive weights in the paper variant.
	Epsilon float64
	// Refine adds the refinement stage after either variant's weights: one
	// EM step on the sigma points of the components moves every weight,
	// position and covariance towards the positive part of the input, and
	// weight iterations at the new centroids follow (docs/algorithms.md,
	// "Refined ReLU fit"). The output's positions and covariances then
	// differ from the input's. Its gradient is exact: the backward pass
	// runs through the refinement, with its discrete decisions held fixed.
	Refine bool
}

// ReLUFitParams are the resolved constants of a fit. Both variants share
// a″_k = x_k·(max(t_k, 0) − κ⁺ + Off)/(e_k + Off), with Off = 0 for the
// paper's, κ⁺ = max(κ, 0) and t_k the target including κ; they differ only
// in the coarse weight x (CoarseWeight).
type ReLUFitParams struct {
	// Paper selects the paper's coarse rule.
	Paper bool
	// Coarse is the reference variant's offset added to max(a, 0).
	Coarse float64
	// Floor is the paper variant's value replacing non-positive weights.
	Floor float64
	// Off is the reference variant's offset in numerator and denominator.
	Off float64
	// Refine adds the refinement stage (ReLUFitOptions.Refine).
	Refine bool
}

// Resolve checks the options and fills in the defaults. It is the one place
// where the defaults are applied, for every device; the error names the bad
// field.
func (o ReLUFitOptions) Resolve() (ReLUFitParams, error) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"CoarseOffset", o.CoarseOffset}, {"Offset", o.Offset}, {"Epsilon", o.Epsilon}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			return ReLUFitParams{}, errors.Errorf("ReLUFitOptions.%s must be finite and ≥ 0 (0 selects the default), got %v", f.name, f.v)
		}
	}
	orDefault := func(v, d float64) float64 {
		if v == 0 {
			return d
		}
		return v
	}
	switch o.Variant {
	case ReLUFitReference:
		return ReLUFitParams{
			Coarse: orDefault(o.CoarseOffset, DefaultReLUFitCoarseOffset),
			Off:    orDefault(o.Offset, DefaultReLUFitOffset),
			Refine: o.Refine,
		}, nil
	case ReLUFitPaper:
		return ReLUFitParams{Paper: true, Floor: orDefault(o.Epsilon, DefaultReLUFitEpsilon), Refine: o.Refine}, nil
	}
	return ReLUFitParams{}, errors.Errorf("ReLUFitOptions.Variant %d is neither ReLUFitReference nor ReLUFitPaper", o.Variant)
}

// CoarseWeight returns the coarse weight x of the fit for the input weight a
// of a mixture with constant κ. Both variants start from the reference's
// a_init = a if a + κ > 0, else −κ⁺ (κ⁺ = max(κ, 0): a component that does
// not lift f + κ above 0 takes the part of the constant the fit removes);
// the reference variant returns |a_init| + Coarse, the paper variant
// |a_init|, or Floor where that is 0. With κ = 0 these are max(a, 0) + Coarse
// and "a if a > 0 else Floor", bit for bit.
func CoarseWeight[T Float](p ReLUFitParams, a, kappa T) T {
	v := -max(kappa, 0)
	if a+kappa > 0 {
		v = a
	}
	if v < 0 {
		v = -v
	}
	switch {
	case !p.Paper:
		return v + T(p.Coarse)
	case v == 0:
		return T(p.Floor)
	}
	return v
}

// CoarseSlopes returns ∂x/∂a and ∂x/∂κ of x = CoarseWeight(p, a, κ), the
// same for both variants: x follows |a| where a + κ > 0 and κ⁺ elsewhere.
// The derivative at a kink (a + κ = 0, a = 0, κ = 0) is taken as 0.
func CoarseSlopes[T Float](a, kappa T) (da, dkappa T) {
	switch {
	case a+kappa > 0 && a > 0:
		return 1, 0
	case a+kappa > 0 && a < 0:
		return -1, 0
	case !(a+kappa > 0) && kappa > 0:
		return 0, 1
	}
	return 0, 0
}

// Limits of TreeHEM, as in the reference: 16-bit component ids in the Morton
// keys (N < 65535) and at most 1024 output components.
const (
	TreeHEMMaxN  = 65534
	TreeHEMMaxNp = 1024
)

// TreeHEMOptions configures TreeHEM. It has no defaults: Check rejects a
// Reduction that is not set.
type TreeHEMOptions struct {
	// Reduction is T, the number of Gaussians an EM step fits 2T children
	// down to: 2, 4 or 8. The paper's networks use 2.
	Reduction int
	// UnderFill reproduces the reference's selection loop, which stops while
	// fewer than Np − T slots are filled and so leaves 1…T zero-weight padding
	// slots in every reduced mixture, and its padding {0, 0, s·I} with
	// s = mean_k tr(Σ_k)/D of the input mixture, also where N ≤ Np: the
	// reference pads with the identity in the space it pre-scaled by 1/s,
	// and the padding's covariance enters the next CovScaleNorm's statistic.
	// By default all Np slots are filled and padding, if any, is {0, 0, I}.
	UnderFill bool
}

// Check returns a descriptive error unless TreeHEM with options o can reduce
// mixtures of layout l to np components.
func (o TreeHEMOptions) Check(l mixture.Layout, np int) error {
	switch {
	case o.Reduction != 2 && o.Reduction != 4 && o.Reduction != 8:
		return errors.Errorf("reduction T = %d must be 2, 4 or 8", o.Reduction)
	case np < 1 || np > TreeHEMMaxNp:
		return errors.Errorf("output size Np = %d must be in [1, %d]", np, TreeHEMMaxNp)
	case np < o.Reduction:
		return errors.Errorf("output size Np = %d is smaller than the reduction T = %d; the reference runs MEM for that case, which is not implemented: use Np ≥ T", np, o.Reduction)
	case l.N < 1 || l.N > TreeHEMMaxN:
		return errors.Errorf("component count N = %d must be in [1, %d] (16-bit component ids)", l.N, TreeHEMMaxN)
	case l.D != 2 && l.D != 3:
		return errors.Errorf("dimension D = %d must be 2 or 3", l.D)
	case l.B < 1 || l.C < 1:
		return errors.Errorf("batch %d and channels %d must be ≥ 1", l.B, l.C)
	}
	return nil
}

// KernelConfig holds the constants that map a convolution layer's raw
// learnable tensors to its packed kernel (see Kernels.AssembleKernel).
type KernelConfig struct {
	// Radius r scales positions (μ = r·p) and, as (r/3)², covariances.
	Radius float64
	// WeightSD and WeightMean map raw weights to w = raw·WeightSD + WeightMean.
	WeightSD, WeightMean float64
	// CovEpsilon is the relative regulariser of the covariances.
	CovEpsilon float64
	// Float32Epsilon computes ε as the reference does, in float32 whatever
	// the model's dtype: fl32(fl32(CovEpsilon)·fl32(max(1, max|A·Aᵀ|))).
	// The reference builds the regulariser on a float32 identity matrix, so
	// even its float64 models add a float32 ε, and its float32 models round
	// CovEpsilon to float32 before the product. By default ε is computed in
	// float64, which differs from it by about one float32 rounding; use the
	// option only for parity with the reference.
	Float32Epsilon bool
}

// DefaultKernelConfig returns the reference model's constants for radius r:
// weight sd 1, weight mean 0.1 and covariance epsilon 0.05.
func DefaultKernelConfig(r float64) KernelConfig {
	return KernelConfig{Radius: r, WeightSD: 1, WeightMean: 0.1, CovEpsilon: 0.05}
}

// Check returns a descriptive error unless every constant of c is usable:
// a positive finite radius and regulariser (a zero ε would let A·Aᵀ be
// singular) and finite weight constants.
func (c KernelConfig) Check() error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(c.Radius > 0) || !finite(c.Radius):
		return errors.Errorf("radius must be positive and finite, got %g", c.Radius)
	case !(c.CovEpsilon > 0) || !finite(c.CovEpsilon):
		return errors.Errorf("covariance epsilon must be positive and finite, got %g", c.CovEpsilon)
	case !finite(c.WeightSD) || !finite(c.WeightMean):
		return errors.Errorf("weight sd %g and mean %g must be finite", c.WeightSD, c.WeightMean)
	}
	return nil
}

// Epsilon returns the covariance regulariser ε = CovEpsilon·max(1, m) for
// m = max|A·Aᵀ| over the layer's factors, rounded as Float32Epsilon asks.
// It is the one place where the rule is applied, for every device.
func (c KernelConfig) Epsilon(m float64) float64 {
	m = math.Max(1, m)
	if c.Float32Epsilon {
		return float64(float32(c.CovEpsilon) * float32(m))
	}
	return c.CovEpsilon * m
}

// CovRange returns (r/3)², the covariance scale of the reference's pos2cov:
// a Gaussian of that variance has most of its mass within the radius.
func (c KernelConfig) CovRange() float64 {
	q := c.Radius / 3
	return q * q
}
