// Package optim holds the optimisation of a GMCN training run
// (docs/algorithms.md, "Optimisation"): the Adam optimiser, the decoupled
// weight-decay step on the kernels and the ReduceLROnPlateau learning-rate
// schedule. Every state is a plain exported struct, so a checkpoint stores it
// and a resumed run continues exactly.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package optim
