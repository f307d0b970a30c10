// Package models builds Gaussian Mixture Convolution Networks as one
// Gorgonia graph from a layer string in the paper's notation, e.g.
//
//	1/64 → 8/32 → 16/16 → 32/8 → 64/4 → 10
//
// The graph is: input normalisation (per-sample CovScale, weight
// standardisation with one learnable gain), then per block
// Conv → ÷F_i → dense ReLU fitting → reduction (TreeHEM T=2 by default, none
// in the last block) → CovScaleNorm (running average), then Integrate →
// BatchNorm → LogSoftMax → NLL. A block that is one gm.Block op (no
// constants; exact fused targets only where the device evaluates mixtures
// in Go) computes the first four in one op,
// and the last such block integrates too and has no CovScaleNorm, which
// would change neither the integrals nor their gradients. Optionally a dense head (fully connected
// layer) follows the integration, mixing GM and dense layers in one graph,
// and learnable biases enter the mixtures' constants before every ReLU fit
// (Config.Bias, BiasType).
//
// The model owns its training mode and BatchNorm's running statistics
// (SetTraining, SetState, SetBNStats) and applies them at the start of every
// run of its graph, so a Gorgonia machine may be made before or after a
// state is loaded or the mode is switched, with or without EvalMode.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package models
