package ops

import (
	"fmt"
	"io"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"gorgonia.org/tensor"
)

// Parts that specs and grad computations share, embedded where they fit.

// noParams is embedded by a spec or grad computation without parameters.
type noParams struct{}

func (noParams) writeParams(io.Writer) {}

// mixtureOp is the part of a spec that the ops mapping one packed mixture
// batch "mixture" to another share: the input's name, both ranks and the
// input's gradient. A spec embeds it and adds its name, parameters, shape
// rule and computations.
type mixtureOp struct{}

func (mixtureOp) inputNames() []string { return []string{"mixture"} }
func (mixtureOp) ranks() []int         { return []int{4, 4} }
func (mixtureOp) diffWRT() []bool      { return []bool{true} }

// sameMixture checks the shape s of the input "mixture" and returns a copy
// of it: the output shape of an op that keeps the input's layout.
func sameMixture(s tensor.Shape) (tensor.Shape, error) {
	if _, err := layoutOf("mixture", s); err != nil {
		return nil, err
	}
	return s.Clone(), nil
}

// reduction is the part of a spec that the reductions (KeepLargest, MEM,
// TreeHEM) share: they map every mixture of the batch "mixture" to np
// components. A spec embeds it and adds its name, computations and the
// check of np against the input (reducedShape's argument).
type reduction struct {
	mixtureOp
	np int
}

func (r reduction) writeParams(w io.Writer) { fmt.Fprintf(w, "np=%d", r.np) }

// reducedShape checks the shape s of the input "mixture", then its layout
// with check, and returns s with N replaced by np.
func (r reduction) reducedShape(s tensor.Shape, check func(mixture.Layout) error) (tensor.Shape, error) {
	l, err := layoutOf("mixture", s)
	if err != nil {
		return nil, err
	}
	if err := check(l); err != nil {
		return nil, err
	}
	l.N = r.np
	return tensor.Shape(l.Shape()), nil
}
