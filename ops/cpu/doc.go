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
package cpu
