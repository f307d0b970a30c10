package device

import (
	"fmt"
	"math"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// BlockReduction is how a block reduces its fitted mixtures.
type BlockReduction int

const (
	// BlockUnreduced keeps the ReLU fit's output: the last block of a model.
	BlockUnreduced BlockReduction = iota
	// BlockTreeHEM reduces with TreeHEM (BlockSpec.TreeHEM).
	BlockTreeHEM
	// BlockKeepLargest keeps the Np components of largest weight.
	BlockKeepLargest
	// BlockMEM reduces with the modified EM (Kernels.MEM).
	BlockMEM
)

// BlockSpec describes one GMCN block as one computation (Kernels.Block):
//
//	data x [B, Fi, Ni] ⊛ kernels k [Fo, Fi, Nk]   Conv, or ConvFit to Fit.N
//	→ ÷Fi                                         ScaleWeights(1/Fi)
//	→ ReLU fit with ReLU, no constants            ReLUFit
//	→ reduction to Np                             TreeHEM, KeepLargest, MEM or none
//	→ with Integrate, each mixture's integral     Integrate
//
// which equals those computations run one after another, with the same
// discrete decisions.
type BlockSpec struct {
	// Fit is the fused convolution-fitting's selection; Fit.N = 0 convolves
	// instead (Conv).
	Fit ConvFitSelect
	// ReLU are the ReLU fit's options.
	ReLU ReLUFitOptions
	// Reduce is the reduction, to Np components per mixture; Np is ignored
	// by BlockUnreduced.
	Reduce BlockReduction
	Np     int
	// TreeHEM are the options of BlockTreeHEM.
	TreeHEM TreeHEMOptions
	// NearTargets gives a fused block's ReLU fit near-group targets of
	// radius Near ≥ 0 (docs/fused.md): the target at each centroid is the
	// fitted mixture's value made exact over the components of its own
	// group and, for Near > 0, of every group within Mahalanobis distance
	// Near of it (under the group's covariance); +Inf gives the exact
	// convolution at the centroids. Without it the targets are the fitted
	// mixture's own values and Near must be 0.
	NearTargets bool
	Near        float64
	// Integrate ends the block by integrating each reduced mixture: its
	// output is [B, Fo] instead of the mixtures. A model's last block does,
	// so that its mixtures, often its largest, never leave the device.
	Integrate bool
}

// Fused reports whether the block fits the convolution (ConvFit) instead
// of forming it.
func (b BlockSpec) Fused() bool { return b.Fit.N > 0 }

// ExactTargets reports whether the block's ReLU fit targets are the exact
// convolution at the fitted mixture's centroids: near-group targets of
// radius +Inf.
func (b BlockSpec) ExactTargets() bool { return b.NearTargets && math.IsInf(b.Near, 1) }

// ConvLayout returns the layout of the block's convolution (or fused
// convolution-fitting) for data lx and kernels lk: the ReLU fit's input and
// output.
func (b BlockSpec) ConvLayout(lx, lk mixture.Layout) mixture.Layout {
	if b.Fused() {
		return ConvFitLayout(lx, lk, b.Fit.N)
	}
	return ConvLayout(lx, lk)
}

// Layout returns the layout of the block's reduced mixtures for data lx and
// kernels lk: its output unless it integrates them (Shape).
func (b BlockSpec) Layout(lx, lk mixture.Layout) mixture.Layout {
	l := b.ConvLayout(lx, lk)
	if b.Reduce != BlockUnreduced {
		l.N = b.Np
	}
	return l
}

// Shape returns the shape of the block's output for data lx and kernels lk:
// [B, Fo, Np, 1+D+D·D], or [B, Fo] if it integrates.
func (b BlockSpec) Shape(lx, lk mixture.Layout) []int {
	l := b.Layout(lx, lk)
	if b.Integrate {
		return []int{l.B, l.C}
	}
	return l.Shape()
}

// OutLen returns the number of values of the block's output (Shape).
func (b BlockSpec) OutLen(lx, lk mixture.Layout) int {
	l := b.Layout(lx, lk)
	if b.Integrate {
		return l.Mixtures()
	}
	return l.Len()
}

// Scale returns the block's weight factor 1/Fi for data lx.
func (b BlockSpec) Scale(lx mixture.Layout) float64 { return 1 / float64(lx.C) }

// Check reports a spec the block cannot compute for data lx and kernels lk
// (whose sizes the caller has checked to match), naming the part.
func (b BlockSpec) Check(lx, lk mixture.Layout) error {
	if b.Fused() {
		if err := b.Fit.Check(); err != nil {
			return errors.Wrap(err, "block's fused convolution-fitting")
		}
		if nv := lx.C * lx.N * lk.N; nv > math.MaxInt32 {
			return errors.Errorf("block's fused convolution-fitting: Fi·Ni·Nk = %d convolved Gaussians per channel exceed the limit 2³¹ − 1", nv)
		}
	}
	p, err := b.ReLU.Resolve()
	if err != nil {
		return errors.Wrap(err, "block's ReLU fit")
	}
	switch {
	case !b.NearTargets && b.Near != 0:
		return errors.Errorf("block: near-group radius %g without near-group targets", b.Near)
	case !b.NearTargets:
	case !(b.Near >= 0):
		return errors.Errorf("block's near-group targets: radius %g, want a number ≥ 0", b.Near)
	case !b.Fused():
		return errors.New("block's near-group targets need the fused convolution-fitting (Fit.N > 0)")
	case p.Refine:
		return errors.Wrap(ErrRefinedTargets, "block's near-group targets")
	}
	lv := b.ConvLayout(lx, lk)
	switch b.Reduce {
	case BlockUnreduced:
		return nil
	case BlockTreeHEM:
		return errors.Wrap(b.TreeHEM.Check(lv, b.Np), "block's TreeHEM")
	case BlockKeepLargest:
		if b.Np < 1 || b.Np > lv.N {
			return errors.Errorf("block's keep-largest: np = %d must be in [1, N = %d]", b.Np, lv.N)
		}
		return nil
	case BlockMEM:
		if b.Np < 1 {
			return errors.Errorf("block's MEM: np = %d must be ≥ 1", b.Np)
		}
		return nil
	}
	return errors.Errorf("block: unknown reduction %d", b.Reduce)
}

// String writes b as op names and errors show it.
func (b BlockSpec) String() string {
	conv := "conv"
	if b.Fused() {
		conv = fmt.Sprintf("convfit(%v)", b.Fit)
		if b.NearTargets {
			conv = fmt.Sprintf("convfit(%v near=%g)", b.Fit, b.Near)
		}
	}
	red := "unreduced"
	switch b.Reduce {
	case BlockTreeHEM:
		red = fmt.Sprintf("treehem(np=%d T=%d under=%v)", b.Np, b.TreeHEM.Reduction, b.TreeHEM.UnderFill)
	case BlockKeepLargest:
		red = fmt.Sprintf("keeplargest(np=%d)", b.Np)
	case BlockMEM:
		red = fmt.Sprintf("mem(np=%d)", b.Np)
	}
	if b.Integrate {
		red += " integrate"
	}
	return fmt.Sprintf("%s relufit(%+v) %s", conv, b.ReLU, red)
}
