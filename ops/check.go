package ops

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// checkedMixture returns the layout of a packed mixture tensor after checking
// its shape and values (finite, symmetric positive-definite covariances).
func checkedMixture(t *tensor.Dense, input string) (mixture.Layout, error) {
	l, err := mixture.LayoutOf(t.Shape())
	if err != nil {
		return l, errors.Wrapf(err, "input %q", input)
	}
	switch d := t.Data().(type) {
	case []float32:
		err = validateParallel(d, l)
	case []float64:
		err = validateParallel(d, l)
	}
	return l, errors.Wrapf(err, "input %q", input)
}

// validateParallel runs mixture.Validate over the mixtures of x in parallel
// and reports the error of the first invalid mixture in (b, c) order, so the
// message does not depend on scheduling.
func validateParallel[T mixture.Float](x []T, l mixture.Layout) error {
	if len(x) != l.Len() {
		return mixture.Validate(x, l)
	}
	errs := make([]error, l.Mixtures())
	parallel.For(l.Mixtures(), func(m int) {
		if n, err := mixture.ValidateComponents(mixture.Mixture(x, l, m), l.D); err != nil {
			errs[m] = errors.Wrapf(err, "component (b=%d, c=%d, n=%d)", m/l.C, m%l.C, n)
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkedFinite checks that every value of t is finite.
func checkedFinite(t *tensor.Dense, input string) error {
	var err error
	switch d := t.Data().(type) {
	case []float32:
		err = mixture.CheckFinite(d)
	case []float64:
		err = mixture.CheckFinite(d)
	}
	return errors.Wrapf(err, "input %q", input)
}

// sameShape checks that input has exactly the shape want.
func sameShape(input string, got, want tensor.Shape) error {
	if !got.Eq(want) {
		return errors.Errorf("input %q must have shape %v, got %v", input, want, got)
	}
	return nil
}
