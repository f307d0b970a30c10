// Package export writes a trained run in formats other programs read: the
// state that reproduces its predictions as one safetensors file, every
// block's assembled convolution kernels and a few fitted test inputs as the
// reference's mixture PLY files. docs/inference.md lists the tensor names.
package export
