package models

import (
	"fmt"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BiasType selects how a learnable bias enters the mixtures' constants, the
// reference's bias_type. Every mixture of the reference carries a constant
// κ, its value at infinity; the ReLU fit approximates max(f + κ, 0) and
// leaves κ⁺ = max(κ, 0) as the new constant, which the next convolution
// turns into κ·∫K (gmnode.ConvConstant) and divides by F_i like the
// weights. Reduction and CovScaleNorm keep the constant, integration
// ignores it, and the input's constant is 0.
type BiasType int

const (
	// BiasNone resets the constant to 0 before every ReLU fit, the
	// reference's default: the model carries no constants and is the one
	// without this option, bit for bit.
	BiasNone BiasType = iota
	// BiasNormal fits with κ = κ_carried + bias[c]: one learnable bias per
	// channel and block, initially 0. Where κ > 0 the fit's weights can be
	// negative (max(f + κ, 0) − κ⁺ is f where 0 < f + κ < κ), and TreeHEM,
	// meant for positive weights, can fail on them with an error; MEM and
	// keep-largest reduce weights of either sign.
	BiasNormal
	// BiasNegativeSoftplus fits with κ = κ_carried − softplus_20(bias[c]),
	// softplus_β(b) = ln(1 + e^(βb))/β, the bias initially −0.1. Since the
	// input's constant is 0, every κ is ≤ 0 and every carried constant
	// max(κ, 0) is 0: a learnable threshold per channel, max(f − s, 0), with
	// positive weights.
	BiasNegativeSoftplus
)

var biasNames = []string{"none", "normal", "negative-softplus"}

// String returns the name ParseBiasType reads.
func (b BiasType) String() string {
	if b < 0 || int(b) >= len(biasNames) {
		return fmt.Sprintf("BiasType(%d)", int(b))
	}
	return biasNames[b]
}

// ParseBiasType reads "none" (or ""), "normal" or "negative-softplus".
func ParseBiasType(s string) (BiasType, error) {
	if s == "" {
		return BiasNone, nil
	}
	for i, n := range biasNames {
		if s == n {
			return BiasType(i), nil
		}
	}
	return BiasNone, errors.Errorf("unknown bias type %q (want none, normal or negative-softplus)", s)
}

// initial returns the initial value of the bias parameters.
func (b BiasType) initial() float64 {
	if b == BiasNegativeSoftplus {
		return -0.1
	}
	return 0
}

// softplusBeta is the β of BiasNegativeSoftplus, the reference's.
const softplusBeta = 20

// blockConstant returns the constants [B, F_o] a block's ReLU fit sees: the
// carried constants kappa [B, F_i] convolved with the kernels and divided
// by F_i, with the bias [1, F_o] added (BiasNormal) or softplus_20 of it
// subtracted (BiasNegativeSoftplus).
func blockConstant(kappa, kernels, bias *G.Node, fi int, t BiasType) (*G.Node, error) {
	k, err := gmnode.ConvConstant(kappa, kernels)
	if err != nil {
		return nil, err
	}
	dt := kappa.Dtype()
	if k, err = G.Mul(k, G.NewConstant(gmnode.Scalar(dt, 1/float64(fi)))); err != nil {
		return nil, errors.Wrap(err, "constant ÷ Fi")
	}
	switch t {
	case BiasNormal:
		k, err = G.BroadcastAdd(k, bias, nil, []byte{0})
	case BiasNegativeSoftplus:
		var sp *G.Node
		if sp, err = softplus(bias, softplusBeta); err == nil {
			k, err = G.BroadcastSub(k, sp, nil, []byte{0})
		}
	default:
		err = errors.New("no constant to add")
	}
	return k, errors.Wrapf(err, "bias %v", t)
}

// softplus returns ln(1 + e^(βx))/β elementwise.
func softplus(x *G.Node, beta float64) (*G.Node, error) {
	dt := x.Dtype()
	y, err := G.Mul(x, G.NewConstant(gmnode.Scalar(dt, beta)))
	if err == nil {
		y, err = G.Softplus(y)
	}
	if err == nil {
		y, err = G.Mul(y, G.NewConstant(gmnode.Scalar(dt, 1/beta)))
	}
	return y, err
}

// zeroConstants returns the input's constants: zeros [b, c] in dtype dt.
func zeroConstants(dt tensor.Dtype, b, c int) *G.Node {
	return G.NewConstant(tensor.New(tensor.WithShape(b, c), tensor.Of(dt)), G.WithName("input_constant"))
}
