// Package ops exposes the gmcn computations as gorgonia.Op values with
// handwritten gradients, so Gaussian-mixture layers compose with Gorgonia's
// own ops (BatchNorm, LogSoftMax, Adam, …) in one ExprGraph.
//
// Every op is a small kernel type (shape inference, parameters, a Do that
// calls a computation of its device, package ops/device) wrapped by one
// adapter that implements gorgonia.Op and gorgonia.SDOp. Every constructor
// takes the device first: the CPU (CPU, or nil) or one from OpenDevice;
// the op and its grad ops compute there. Differentiation is symbolic: for a
// forward op y = f(x_0, …, x_k) the SymDiff of each differentiable input x_i
// is one grad op applied to (x_0, …, x_k, y, ∂L/∂y) that returns ∂L/∂x_i.
// Grad ops take the discrete decisions of the forward pass (trees,
// selections, masks) from the same inputs: they recompute them, or, for the
// dense ReLU fit, TreeHEM and ConvFit in a graph with their gradient, reuse
// what the forward run saved for bitwise the same inputs (its memo). Both
// give the same decisions, so forward and backward always agree and the
// saved state is only ever a shortcut.
//
// Ops check ranks and sizes in InferShape and the values (finite, symmetric
// positive-definite covariances, matching dtypes) in Do, and return errors
// that name the op, the input, what was expected and what was found.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package ops
