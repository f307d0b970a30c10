package dataset

import (
	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/ops/mixture"
)

// Inputs are the fitted mixtures of one split with their labels: Mixtures
// is a packed float32 batch of layout Layout ([n, 1, K, 1+D+D²]), Labels[i]
// the class of mixture i, 0 ≤ Labels[i] < Classes.
type Inputs struct {
	Layout   mixture.Layout
	Mixtures []float32
	Labels   []int
	Classes  int
}

// Len returns the number of samples, Layout.B.
func (in *Inputs) Len() int { return in.Layout.B }

// FitLayout returns the packed layout [n, 1, K, 1+D+D²] of n samples fitted
// with K Gaussians of dimension d.
func FitLayout(n, k, d int) mixture.Layout { return mixture.Layout{B: n, C: 1, N: k, D: d} }

// Check reports the first inconsistency of in: no samples, sizes, labels
// and the mixtures themselves (finite, symmetric positive-definite
// covariances). Inputs read from a cache or handed to training pass it.
func (in *Inputs) Check() error {
	if in == nil {
		return errors.New("no inputs")
	}
	l := in.Layout
	switch {
	case l.C != 1 || (l.D != 2 && l.D != 3) || l.N < 1 || l.B < 0:
		return errors.Errorf("inputs of layout %v, want [n 1 K 7] or [n 1 K 13] with K ≥ 1", l.Shape())
	case len(in.Mixtures) != l.Len() || len(in.Labels) != l.B:
		return errors.Errorf("inputs of layout %v with %d values and %d labels, want %d values and %d labels",
			l.Shape(), len(in.Mixtures), len(in.Labels), l.Len(), l.B)
	case in.Classes < 1:
		return errors.Errorf("inputs with %d classes, want ≥ 1", in.Classes)
	}
	for i, c := range in.Labels {
		if c < 0 || c >= in.Classes {
			return errors.Errorf("label %d of sample %d, want 0 to %d", c, i, in.Classes-1)
		}
	}
	return errors.Wrap(mixture.Validate(in.Mixtures, l), "invalid mixture")
}
