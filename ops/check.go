package ops

import (
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
		err = mixture.Validate(d, l)
	case []float64:
		err = mixture.Validate(d, l)
	}
	return l, errors.Wrapf(err, "input %q", input)
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
