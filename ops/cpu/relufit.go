package cpu

import (
	"cmp"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// ReLUFit fits the positive part of every mixture of the packed batch x
// (layout l) plus its constant κ = kappa[m] (kappa nil: κ = 0) and writes
// the result into y (same layout): the mixture part of
// max(f + κ, 0) ≈ fit + κ⁺, κ⁺ = max(κ, 0) being the new constant, which the
// caller computes. Positions and covariances are copied; the weights are
// recomputed from the values at the centroids μ_k with
// E_kj = N(μ_k; μ_j, Σ_j):
//
//	t_k = Σ_j a_j E_kj + κ          (the target)
//	b_k = max(t_k, 0) − κ⁺          (its positive part less the new constant)
//	e_k = Σ_j x_j E_kj              (the coarse approximation, x = device.CoarseWeight)
//	a″_k = x_k·(b_k + off)/(e_k + off)
//
// Both sums share every E_kj and run in one O(N²) pass per mixture; κ enters
// only the coarse weights and the finishing per centroid, and with κ = 0 the
// result is bit for bit that of the formulas without it.
//
// With t non-nil (B·C·N values, one per component) the function to fit is
// another one, known only at the centroids: t_k = t[m·N+k] + κ replaces
// Σ_j a_j E_kj, and x's weights enter only the coarse weights. The fused
// convolution-fitting gives this the exact convolution at the centroids of
// its coarse mixture (docs/fused.md). The refined fit, which evaluates the
// target away from the centroids, cannot take given targets. x must hold finite
// values and positive-definite covariances and kappa finite values (the ops
// check this); a non-finite result, which only extreme covariances can
// produce, is reported as an error naming the component.
func ReLUFit[T Float](y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) error {
	return reluFit(y, x, kappa, t, false, l, opts, nil)
}

// ReLUFitSums holds the target t_k (κ and given targets included) and the approximation e_k at
// every centroid of one ReLUFit call, which ReLUFitBackward needs and the
// output does not determine: 2·B·C·N values.
type ReLUFitSums[T Float] struct {
	l    mixture.Layout
	t, e []T
}

// ReLUFitSaving is ReLUFit that also returns the sums, so that
// ReLUFitBackwardSaved can skip the O(N²) forward pass.
func ReLUFitSaving[T Float](y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) (*ReLUFitSums[T], error) {
	s := newReLUFitSums[T](l)
	if err := reluFit(y, x, kappa, t, false, l, opts, s); err != nil {
		return nil, err
	}
	return s, nil
}

func newReLUFitSums[T Float](l mixture.Layout) *ReLUFitSums[T] {
	n := l.Mixtures() * l.N
	return &ReLUFitSums[T]{l: l, t: make([]T, n), e: make([]T, n)}
}

// mixture returns the sums of mixture m; nil for a nil receiver.
func (s *ReLUFitSums[T]) mixture(m int) (t, e []T) {
	if s == nil {
		return nil, nil
	}
	n := s.l.N
	return s.t[m*n : (m+1)*n], s.e[m*n : (m+1)*n]
}

// reluFit is ReLUFit, saving the sums into sums unless it is nil. With add
// the targets t are corrections added to x's own sums instead of replacing
// them: t_k = Σ_j a_j E_kj + t[m·N+k] + κ (the fused blocks' near-group
// targets).
func reluFit[T Float](y, x, kappa, t []T, add bool, l mixture.Layout, opts device.ReLUFitOptions, sums *ReLUFitSums[T]) error {
	p, err := resolveReLUFit(opts, t, l)
	if err != nil {
		return err
	}
	copy(y, x)
	off := T(p.Off)
	err = reluEach(x, kappa, t, add, l, p, false, sums, func(s *reluWork[T], m int) error {
		out := mixture.Mixture(y, l, m)
		s.heuristicWeights(out, off)
		if p.Refine {
			return s.refine(out, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return checkFiniteResult(y, l, "output weight", true)
}

// ReLUFitBackward writes ∂L/∂x for ReLUFit into dx, ∂L/∂κ into dkappa (one
// value per mixture) and, for given targets t, ∂L/∂t into dt, given the
// input x, the constants kappa (nil: κ = 0), the targets t (nil: computed
// from x) and the incoming gradient g = ∂L/∂y (of layout l); a nil dx,
// dkappa or dt is not written, but each needs the whole pass. With
// r_k = (b_k+off)/(e_k+off) and the slopes ∂x_j/∂a_j, ∂x_j/∂κ of
// device.CoarseSlopes (±1 where a_j + κ > 0, and 1 for κ > 0 where it is not):
//
//	∂L/∂b_k = g_k x_k/(e_k+off),   ∂L/∂t_k = ∂L/∂b_k·[t_k > 0]
//	∂L/∂e_k = −g_k x_k r_k/(e_k+off)
//	∂L/∂x_j = g_j r_j + Σ_k ∂L/∂e_k E_kj
//	∂L/∂a_j = Σ_k ∂L/∂t_k E_kj + ∂x_j/∂a_j·∂L/∂x_j
//	∂L/∂κ   = Σ_k (∂L/∂t_k − [κ > 0]·∂L/∂b_k) + Σ_j ∂x_j/∂κ·∂L/∂x_j
//
// and, with G_kj = ∂L/∂t_k a_j + ∂L/∂e_k x_j, w_kj = G_kj E_kj, A_j = Σ_j⁻¹
// and u_kj = A_j (μ_k − μ_j),
//
//	∂L/∂μ_j = g_μj + Σ_k w_kj u_kj − Σ_i w_ji u_ji
//	∂L/∂Σ_j = g_Σj + ½ (Σ_k w_kj u_kj u_kjᵀ − (Σ_k w_kj) A_j)
//
// where g_μ, g_Σ are the pass-through gradients of the copied positions and
// covariances. With given targets ∂L/∂t[m·N+k] = ∂L/∂t_k, and the terms of
// t_k drop out of the rest: a_j is 0 in G_kj and Σ_k ∂L/∂t_k E_kj is not
// added to ∂L/∂a_j. The derivative of max at t_k = 0 or κ = 0 and of the coarse
// rule at its kinks (device.CoarseSlopes) is taken as 0.
func ReLUFitBackward[T Float](dx, dkappa, dt, x, kappa, t, g []T, l mixture.Layout, opts device.ReLUFitOptions) error {
	return ReLUFitBackwardSaved(dx, dkappa, dt, x, kappa, t, g, l, opts, nil)
}

// ReLUFitBackwardSaved is ReLUFitBackward reading the forward sums from
// sums, which ReLUFitSaving returned for this x, kappa, t, l and opts, instead
// of recomputing them; with sums nil it recomputes them. It reports sums
// saved for another layout as an error.
func ReLUFitBackwardSaved[T Float](dx, dkappa, dt, x, kappa, t, g []T, l mixture.Layout, opts device.ReLUFitOptions, sums *ReLUFitSums[T]) error {
	return reluFitBackward(dx, dkappa, dt, x, kappa, t, false, g, l, opts, sums)
}

// reluFitBackward is ReLUFitBackwardSaved, for targets t added to x's own
// sums if add (see reluFit).
func reluFitBackward[T Float](dx, dkappa, dt, x, kappa, t []T, add bool, g []T, l mixture.Layout, opts device.ReLUFitOptions, sums *ReLUFitSums[T]) error {
	p, err := resolveReLUFit(opts, t, l)
	if err != nil {
		return err
	}
	if sums != nil && sums.l != l {
		return errors.Errorf("ReLU fit sums saved for layout %v, used for %v", sums.l.Shape(), l.Shape())
	}
	if dx == nil {
		dx = make([]T, len(g))
	}
	copy(dx, g)
	err = reluEach(x, kappa, t, add, l, p, true, sums, func(s *reluWork[T], m int) error {
		var dk T
		if p.Refine {
			var err error
			if dk, err = s.refineBackward(mixture.Mixture(dx, l, m), mixture.Mixture(x, l, m), p); err != nil {
				return err
			}
		} else {
			dk = s.backward(mixture.Mixture(dx, l, m), p)
		}
		if dkappa != nil {
			dkappa[m] = dk
		}
		if dt != nil {
			copy(dt[m*l.N:(m+1)*l.N], s.gt[:l.N])
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := checkFiniteResult(dx, l, "gradient", false); err != nil {
		return err
	}
	if err := mixture.CheckFinite(dt); err != nil {
		return errors.Wrap(err, "gradient of the targets")
	}
	return errors.Wrap(mixture.CheckFinite(dkappa), "gradient of the constant")
}

// resolveReLUFit resolves opts and checks that given targets t (nil: none)
// hold one value per component and do not meet the refined fit.
func resolveReLUFit[T Float](opts device.ReLUFitOptions, t []T, l mixture.Layout) (device.ReLUFitParams, error) {
	p, err := opts.Resolve()
	switch {
	case err != nil || t == nil:
		return p, err
	case p.Refine:
		return p, device.ErrRefinedTargets
	case len(t) != l.Mixtures()*l.N:
		return p, errors.Errorf("ReLU fit targets: %d values for %d components", len(t), l.Mixtures()*l.N)
	}
	return p, nil
}

// reluEach loads every mixture of x with its constant (kappa[m], or 0 for a
// nil kappa) and its given targets (t, or none for a nil t; added to its
// own sums if add, else replacing them) into a
// per-worker reluWork (with the backward buffers if
// backward is set) and hands the work to f with the forward sums in place;
// it returns the first error of a load or of f. The sums come from sums in
// the backward pass and are computed, and stored into sums, in the forward
// pass or when sums is nil.
func reluEach[T Float](x, kappa, t []T, add bool, l mixture.Layout, p device.ReLUFitParams, backward bool, sums *ReLUFitSums[T], f func(s *reluWork[T], m int) error) error {
	ws := make([]*reluWork[T], parallel.Workers(l.Mixtures()))
	for i := range ws {
		ws[i] = newReLUWork[T](l.N, l.D, backward)
		ws[i].given = t != nil && !add
	}
	errs := make([]error, len(ws))
	parallel.ForWorker(l.Mixtures(), func(w, m int) {
		s := ws[w]
		var k T
		if kappa != nil {
			k = kappa[m]
		}
		if err := s.load(mixture.Mixture(x, l, m), k, p); err != nil {
			errs[w] = cmp.Or(errs[w], mixtureError(err, l, m))
			return
		}
		st, se := sums.mixture(m)
		if backward && sums != nil {
			copy(s.t, st)
			copy(s.e, se)
		} else {
			s.forward()
			if t != nil {
				for k, v := range t[m*l.N : (m+1)*l.N] {
					s.t[k] += v
				}
			}
			copy(st, s.t)
			copy(se, s.e)
		}
		if err := f(s, m); err != nil {
			errs[w] = cmp.Or(errs[w], mixtureError(err, l, m))
		}
	})
	return cmp.Or(errs...)
}

// mixtureError names mixture m = b·C + c in err.
func mixtureError(err error, l mixture.Layout, m int) error {
	return errors.Wrapf(err, "mixture (b=%d, c=%d)", m/l.C, m%l.C)
}
