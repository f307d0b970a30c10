// Package optim holds the optimisation of a GMCN training run
// (docs/algorithms.md, "Optimisation"): the Adam optimiser, the decoupled
// weight-decay step on the kernels and the ReduceLROnPlateau learning-rate
// schedule. Every state is a plain exported struct, so a checkpoint stores it
// and a resumed run continues exactly.
package optim
