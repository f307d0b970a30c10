package gmnode

import (
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
)

// Grad adds the gradients of cost with respect to wrt to cost's graph, as
// gorgonia.Grad does, and returns them with the subgraph a machine should
// run: every node the graph had before, and the gradient nodes that the
// gradients of wrt need.
//
// gorgonia.Grad gives every differentiable input of an op on the way from
// wrt to cost a gradient node, needed or not: the gradients of a model's
// input data and of its labels, which nothing learns from, are such. A
// machine built on the whole graph computes those at every step (on the
// CUDA device, a call with its own transfers); one built on the returned
// subgraph does not, and computes the same values otherwise.
func Grad(cost *G.Node, wrt ...*G.Node) (*G.ExprGraph, G.Nodes, error) {
	if cost == nil || cost.Graph() == nil {
		return nil, nil, errors.New("gmnode.Grad: the cost is not a node of a graph")
	}
	g := cost.Graph()
	roots := append(G.Nodes{}, g.AllNodes()...)
	grads, err := G.Grad(cost, wrt...)
	if err != nil {
		return nil, nil, err
	}
	return g.SubgraphRoots(append(roots, grads...)...), grads, nil
}
