package ops

import (
	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// checkedMixture returns the layout of a packed mixture operand after checking
// its shape and values (finite, symmetric positive-definite covariances).
// Validation runs on the host before any device sees the values.
func checkedMixture[T Float](x operand[T], input string) (mixture.Layout, error) {
	l, err := layoutOf(input, x.shape)
	if err != nil {
		return l, err
	}
	return l, errors.Wrapf(validateParallel(x.data, l), "input %q", input)
}

// layoutOf returns the layout of the packed mixture input named input from
// its shape s.
func layoutOf(input string, s tensor.Shape) (mixture.Layout, error) {
	l, err := mixture.LayoutOf(s)
	return l, errors.Wrapf(err, "input %q", input)
}

// validateChunk is about how many values validateParallel checks per work
// item: handing out single mixtures of a few components made the workers
// contend for the next index (on 16 cores, 0.4 s of the host's time in 300
// GPU training steps of the paper-fused model went to parallel.For's loop
// itself), and inputs of one chunk or less are checked on the caller's
// goroutine.
const validateChunk = 1 << 14

// validateParallel runs mixture.Validate over the mixtures of x in parallel
// chunks and reports the error of the first invalid mixture in (b, c)
// order, so the message does not depend on scheduling.
func validateParallel[T Float](x []T, l mixture.Layout) error {
	if len(x) != l.Len() {
		return mixture.Validate(x, l)
	}
	nm := l.Mixtures()
	per := max(1, validateChunk/max(1, l.N*l.Stride())) // mixtures per item
	errs := make([]error, (nm+per-1)/per)
	parallel.For(len(errs), func(item int) {
		for m := item * per; m < min((item+1)*per, nm); m++ {
			if n, err := mixture.ValidateComponents(mixture.Mixture(x, l, m), l.D); err != nil {
				errs[item] = errors.Wrapf(err, "component (b=%d, c=%d, n=%d)", m/l.C, m%l.C, n)
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkedFinite checks that every value of x is finite.
func checkedFinite[T Float](x operand[T], input string) error {
	return errors.Wrapf(mixture.CheckFinite(x.data), "input %q", input)
}

// sameShape checks that input has exactly the shape want.
func sameShape(input string, got, want tensor.Shape) error {
	if !got.Eq(want) {
		return errors.Errorf("input %q must have shape %v, got %v", input, want, got)
	}
	return nil
}
