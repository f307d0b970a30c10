// Package device is the seam between the ops of package ops and the
// hardware that computes them.
//
// An op checks shapes and values, chooses the output size and calls the
// computations it needs through a Kernels[T]: integration, convolution,
// evaluation, the dense ReLU fit, the TreeHEM and MEM reductions,
// CovScaleNorm, kernel assembly, weight decay, standardisation and weight
// scaling, forward and backward. Package ops/cpu implements Kernels in pure
// Go; package cudaops implements it on an NVIDIA GPU (build tag gmcuda) and
// hands the computations it has no GPU kernel for to a fallback, in one file.
// A Device bundles the float32 and float64 kernels of one place.
//
// The package also holds what both implementations and the ops must agree on:
// the option types of the computations with their defaults (each resolved by
// one exported function, so a default cannot drift between devices), and the
// shape rules the ops use to size their outputs (ConvLayout). It imports only
// the packed layout of package mixture, so every package that computes can
// depend on it without depending on another computing package.
//
// Every Kernels method follows the conventions of ops/cpu: slices in the
// packed layout of package mixture, the destination first, inputs already
// checked by the op (finite values, positive-definite covariances, matching
// lengths). A method returns an error for a failure of the device itself (a
// GPU launch) or for a result it cannot represent (a non-finite weight);
// it never panics on data the op has checked.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package device
