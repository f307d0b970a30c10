// Package cpu holds the pure-Go kernels behind the gmcn ops: evaluation,
// analytic convolution, integration, CovScaleNorm, kernel assembly, dense ReLU
// fitting and the reductions. Every kernel is one generic function over
// float32 and float64 that works on packed slices (see package mixture for the
// layout), runs in parallel over the B·C mixtures, allocates nothing in its
// inner loops and computes each Gaussian's inverse and determinant once.
//
// Gradients are handwritten: for an op y = f(x) the backward kernel receives
// the incoming gradient ∂L/∂y and returns ∂L/∂x; the formulas are given in
// each kernel's comments.
//
// Every computation X with discrete decisions (a selection, a tree, a sign
// mask) or an expensive forward intermediate that its backward needs again
// names its variants alike:
//
//	X               the forward pass
//	XBackward       its gradient, recomputing every decision from the inputs
//	XSaving         X that also returns its decisions and intermediates
//	XBackwardSaved  XBackward with what XSaving returned, recomputing nothing
//
// Both backward variants give the same result: the decisions are a
// deterministic function of the input. The methods of Kernels carry the
// names of device.Kernels, where XBackward takes the saved state or nil.
// The tests add XFrozen, the forward pass with given decisions, whose finite
// differences XBackwardSaved must match.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package cpu
