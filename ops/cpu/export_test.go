package cpu

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// The forward passes with frozen decisions exist for the tests only: with
// the discrete choices of a reduction held fixed, the reduction is a smooth
// function of its input, and its finite differences are what XBackwardSaved
// must match (see doc.go for the naming scheme).

// TreeHEMFrozen recomputes the reduction of x with the decisions of an
// earlier TreeHEMSaving call instead of making new ones. With dec from
// TreeHEMSaving(x) it reproduces TreeHEM's output; for a perturbed x it is
// the smooth function whose derivative TreeHEMBackwardSaved computes.
func TreeHEMFrozen[T Float](y, x []T, dec *Decisions) error {
	if err := checkTreeHEMData(len(y), len(x), dec.l, dec.np, dec.o); err != nil {
		return err
	}
	return runTreeHEM(hemReplay, y, nil, x, nil, dec)
}

// MEMDecisions returns the discrete and detached parts of MEM for every
// mixture of x: sel [B·C·K], the initial selection (memSelect), and lik
// [B·C·N·K], the likelihoods L_is, row i, column s. With them fixed,
// MEMFrozen and MEMBackwardSaved are a smooth function and its exact
// gradient.
func MEMDecisions[T Float](x []T, l mixture.Layout, np int) (sel []int, lik []T) {
	k := memComponents(l.N, np)
	sel, lik = make([]int, l.Mixtures()*k), make([]T, l.Mixtures()*l.N*k)
	memEach(x, l, np, func(m int, _ []T, sc *memScratch[T]) {
		copy(sel[m*k:(m+1)*k], sc.sel)
		copy(lik[m*l.N*k:(m+1)*l.N*k], sc.lik)
	})
	return sel, lik
}

// MEMFrozen is MEM with the selection and likelihoods given (as returned by
// MEMDecisions, possibly for other inputs).
func MEMFrozen[T Float](y, x, lik []T, sel []int, l mixture.Layout, np int) {
	lo := l
	lo.N = np
	memEachFrozen(x, lik, sel, l, np, func(m int, mx, lik []T, sel []int, sc *memScratch[T]) {
		memForward(mixture.Mixture(y, lo, m), mx, lik, sel, l.D, sc)
	})
}

// MEMBackwardSaved is MEMBackward with the selection and likelihoods given.
func MEMBackwardSaved[T Float](dx, x, gy, lik []T, sel []int, l mixture.Layout, np int) {
	lo := l
	lo.N = np
	memEachFrozen(x, lik, sel, l, np, func(m int, mx, lik []T, sel []int, sc *memScratch[T]) {
		memBackward(mixture.Mixture(dx, l, m), mx, mixture.Mixture(gy, lo, m), lik, sel, l.D, sc)
	})
}

// memEachFrozen is memEach with mixture m's likelihoods and selection taken
// from lik and sel instead of computed.
func memEachFrozen[T Float](x, lik []T, sel []int, l mixture.Layout, np int, f func(m int, mx, lik []T, sel []int, sc *memScratch[T])) {
	k := memComponents(l.N, np)
	scratch := newMEMScratch[T](parallel.Workers(l.Mixtures()), l.N, k)
	parallel.ForWorker(l.Mixtures(), func(w, m int) {
		f(m, mixture.Mixture(x, l, m), lik[m*l.N*k:(m+1)*l.N*k], sel[m*k:(m+1)*k], &scratch[w])
	})
}

// evaluator is Evaluate as a mixture.Evaluator, for the fitting errors.
func evaluator[T Float](y, x, pts []T, l mixture.Layout, pb, pc, m int) error {
	Evaluate(y, x, pts, l, pb, pc, m)
	return nil
}
