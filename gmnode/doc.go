// Package gmnode is the graph-building API of gmcn: functions in Gorgonia's
// style that add Gaussian-mixture ops to an ExprGraph and return
// (*gorgonia.Node, error), plus constructors for learnable kernels.
//
// Mixture nodes are packed tensors [B, C, N, 1+D+D·D] (see package
// ops/mixture). All inputs of one call must share a dtype, float32 for
// training or float64 for checks.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package gmnode
