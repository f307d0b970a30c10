package ops

import (
	"io"

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
