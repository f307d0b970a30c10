// Package models builds Gaussian Mixture Convolution Networks as one
// Gorgonia graph from a layer string in the paper's notation, e.g.
//
//	1/64 → 8/32 → 16/16 → 32/8 → 64/4 → 10
//
// The graph is: input normalisation (per-sample CovScale, weight
// standardisation with one learnable gain), then per block
// Conv → ÷F_i → dense ReLU fitting → reduction (TreeHEM T=2 by default, none
// in the last block) → CovScaleNorm (running average), then Integrate →
// BatchNorm → LogSoftMax → NLL. Optionally a dense head (fully connected
// layer) follows the integration, mixing GM and dense layers in one graph.
package models
