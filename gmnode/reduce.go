package gmnode

import (
	"strconv"

	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// MEM reduces every mixture of x [B, C, N, ·] to np ≥ 1 components
// [B, C, np, ·] with the reference's modified EM (see ops.NewMEM). If N < np
// the last np − N slots are padding {0, 0, I}.
func MEM(x *G.Node, np int) (*G.Node, error) {
	return G.ApplyOp(ops.NewMEM(on(x), np), x)
}

// Reduction is a reduction method for ReLUFitReduce, made by UseTreeHEM,
// UseMEM or UseKeepLargest. The zero value is no method and is rejected
// unless np < 0.
type Reduction struct {
	name   string
	reduce func(x *G.Node, np int) (*G.Node, error)
	check  func(n, np, d int) error
	// block returns the reduction part of a gm.Block spec that reduces to
	// np ≥ 1 as reduce does, or false where the block cannot.
	block func(np int) (ops.BlockSpec, bool)
}

// BlockSpec returns a gm.Block spec (ops.BlockSpec, see Block) whose
// reduction is the method's to np components, np < 0 being none, and
// whether the block can reduce as ReLUFitReduce would: TreeHEM with
// np ≥ T, MEM and KeepLargest can, TreeHEM to fewer than T (which adds MEM)
// cannot. The caller sets the spec's convolution and ReLU fit.
func (r Reduction) BlockSpec(np int) (ops.BlockSpec, bool) {
	switch {
	case np < 0:
		return ops.BlockSpec{Reduce: ops.BlockUnreduced}, true
	case r.block == nil:
		return ops.BlockSpec{}, false
	}
	return r.block(np)
}

// Check reports whether the method can reduce mixtures of n Gaussians of
// dimension d to np, with the error its op would give when the graph is
// built; models check a whole layout with it before building anything.
func (r Reduction) Check(n, np, d int) error {
	if r.check == nil {
		return errors.New("no reduction method")
	}
	return r.check(n, np, d)
}

// checkMEM is MEM's parameter check.
func checkMEM(_, np, _ int) error {
	if np < 1 {
		return errors.Errorf("the number of output components np must be ≥ 1, got %d", np)
	}
	return nil
}

// String returns the method's name, e.g. "TreeHEM(T=2)".
func (r Reduction) String() string {
	if r.reduce == nil {
		return "no reduction method"
	}
	return r.name
}

// UseMEM selects the modified EM reduction (the paper's "MEM" ablation).
func UseMEM() Reduction {
	return Reduction{name: "MEM", reduce: MEM, check: checkMEM, block: func(np int) (ops.BlockSpec, bool) {
		return ops.BlockSpec{Reduce: ops.BlockMEM, Np: np}, true
	}}
}

// KeepLargest reduces every mixture of x [B, C, N, ·] to its np ≤ N
// components of largest weight, largest first (see ops.NewKeepLargest).
func KeepLargest(x *G.Node, np int) (*G.Node, error) {
	return G.ApplyOp(ops.NewKeepLargest(on(x), np), x)
}

// UseKeepLargest selects the reduction that keeps the np components of
// largest weight of the dense fit: the reference's fixed_point_and_max,
// which it pairs with the fused convolution-fitting. Unlike TreeHEM and MEM
// it drops the other components' mass instead of merging it.
func UseKeepLargest() Reduction {
	return Reduction{name: "KeepLargest", reduce: KeepLargest, check: func(n, np, _ int) error {
		if np < 1 || np > n {
			return errors.Errorf("the number of kept components np must be in [1, N = %d], got %d", n, np)
		}
		return nil
	}, block: func(np int) (ops.BlockSpec, bool) {
		return ops.BlockSpec{Reduce: ops.BlockKeepLargest, Np: np}, true
	}}
}

// UseTreeHEM selects TreeHEM with reduction factor t (the paper uses 2).
// As in the reference (fitting.py fixed_point_and_tree_hem), an np below t
// reduces to t components with TreeHEM first and then to np with MEM.
func UseTreeHEM(t int, opts ...TreeHEMOption) Reduction {
	return Reduction{name: "TreeHEM(T=" + strconv.Itoa(t) + ")", reduce: func(x *G.Node, np int) (*G.Node, error) {
		if np >= 1 && np < t {
			y, err := TreeHEM(x, t, t, opts...)
			if err != nil {
				return nil, err
			}
			return MEM(y, np)
		}
		return TreeHEM(x, np, t, opts...)
	}, check: func(n, np, d int) error {
		if np >= 1 && np < t {
			np = t
		}
		return ops.TreeHEMOptions{Reduction: t}.Check(mixture.Layout{B: 1, C: 1, N: n, D: d}, np)
	}, block: func(np int) (ops.BlockSpec, bool) {
		o := ops.TreeHEMOptions{Reduction: t}
		for _, f := range opts {
			f(&o)
		}
		return ops.BlockSpec{Reduce: ops.BlockTreeHEM, Np: np, TreeHEM: o}, np >= t
	}}
}

// ReduceOption adjusts ReLUFitReduce.
type ReduceOption func(*reduceConfig)

type reduceConfig struct {
	relu     []ops.ReLUFitOptions
	dense    **G.Node
	kappa    *G.Node
	kappaOut **G.Node
	targets  *G.Node
}

// WithReLUFitOptions passes o to the dense ReLU fit (default: the reference
// variant and constants).
func WithReLUFitOptions(o ops.ReLUFitOptions) ReduceOption {
	return func(c *reduceConfig) { c.relu = []ops.ReLUFitOptions{o} }
}

// KeepDense stores the dense ReLU-fit node in *dense, so that its value can
// be inspected after a run, e.g. by FitErrors.
func KeepDense(dense **G.Node) ReduceOption {
	return func(c *reduceConfig) { c.dense = dense }
}

// WithConstant fits the mixtures with their constants kappa [B, C]
// (ReLUFitConstant instead of ReLUFit) and stores the new constants κ⁺ in
// *kappaOut unless kappaOut is nil. A reduction keeps a mixture's constant,
// so κ⁺ is the constant of the reduced mixtures too.
func WithConstant(kappa *G.Node, kappaOut **G.Node) ReduceOption {
	return func(c *reduceConfig) { c.kappa, c.kappaOut = kappa, kappaOut }
}

// WithTargets fits the ReLU of the function whose values at the centroids
// are t [B, C, N] instead of the mixture's own (ReLUFitTargets).
func WithTargets(t *G.Node) ReduceOption {
	return func(c *reduceConfig) { c.targets = t }
}

// ReLUFitReduce is the activation block of a GMCN layer: the dense ReLU fit
// of x [B, C, N, ·] (ReLUFit, or ReLUFitConstant with the option
// WithConstant) followed by the reduction of every mixture to
// np components with method, [B, C, np, ·]. np < 0 means no reduction (the
// last layer) and returns the dense fit [B, C, N, ·]; np = 0 is an error.
func ReLUFitReduce(x *G.Node, np int, method Reduction, opts ...ReduceOption) (*G.Node, error) {
	var c reduceConfig
	for _, o := range opts {
		o(&c)
	}
	if np >= 0 && method.reduce == nil {
		return nil, errors.Errorf("gm.ReLUFitReduce: np = %d needs a reduction method (UseMEM or UseTreeHEM); use np < 0 for none", np)
	}
	if np == 0 {
		return nil, errors.New("gm.ReLUFitReduce: np = 0 output components; use np ≥ 1, or np < 0 for no reduction")
	}
	var dense, kappaOut *G.Node
	var err error
	switch {
	case c.targets != nil:
		dense, kappaOut, err = reluFitTargets(x, c.kappa, c.targets, c.relu)
	case c.kappa != nil:
		dense, kappaOut, err = ReLUFitConstant(x, c.kappa, c.relu...)
	default:
		dense, err = ReLUFit(x, c.relu...)
	}
	if err != nil {
		return nil, err
	}
	if c.kappaOut != nil {
		*c.kappaOut = kappaOut
	}
	if c.dense != nil {
		*c.dense = dense
	}
	if np < 0 {
		return dense, nil
	}
	y, err := method.reduce(dense, np)
	return y, errors.Wrapf(err, "gm.ReLUFitReduce with %v", method)
}

// IsZero reports whether r is the zero value (no method chosen), so callers
// can apply their own default.
func (r Reduction) IsZero() bool { return r.reduce == nil }

// reluFitTargets is the ReLU fit of ReLUFitReduce with the option
// WithTargets, with the constants kappa unless kappa is nil; it returns the
// new constants κ⁺ with them.
func reluFitTargets(x, kappa, t *G.Node, opts []ops.ReLUFitOptions) (fit, kappaOut *G.Node, err error) {
	if kappa == nil {
		fit, err = ReLUFitTargets(x, t, opts...)
		return fit, nil, err
	}
	o, err := reluFitOptions("gm.ReLUFitTargets", opts)
	if err != nil {
		return nil, nil, err
	}
	return withConstant("gm.ReLUFitTargets", ops.NewReLUFitTargets(on(x), o, true), kappa, x, kappa, t)
}
