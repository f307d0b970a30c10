package models

import (
	"fmt"

	"gorgonia.org/tensor"
)

// MemoryEstimate is the memory a training step of a model needs, estimated
// from its shapes before anything is built.
type MemoryEstimate struct {
	// Bytes is the estimate: twice the live data of a step (Params plus
	// Activations), since Go's collector lets the heap grow to twice the
	// live data before it collects (GOGC=100), plus Overhead.
	Bytes int64
	// Params counts the learnable parameters with their gradients and
	// Adam's two moments.
	Params int64
	// Activations counts what one step holds at once: every block's
	// forward values, which the graph keeps for the backward pass, their
	// gradients and the reductions' saved decisions.
	Activations int64
	// Largest describes the largest intermediate mixture tensor.
	Largest string
}

// Overhead is what a training process holds besides the model's step: the
// Go runtime, the graph, the MNIST images and the fitted inputs. Measured
// as the peak resident memory of `gmcn train --preset paper` at batch 8 and
// 32 on 2026-11-26 (898 MB and 2.61 GB against 2·live of 526 MB and 2.09
// GB; docs/results.md, "Memory").
const Overhead = 400_000_000

// Per block, the values a step holds of the Fi·Ni·N_k-sized mixtures (the
// convolution's output, its ÷Fi scaling, the dense ReLU fit, each with its
// gradient, and the reduction's saved state) and of the reduced ones (the
// reduction and CovScaleNorm outputs with their gradients).
const (
	denseCopies   = 7
	reducedCopies = 4
)

// EstimateMemory estimates the memory a training step of cfg needs. It
// counts the model and one batch, not the data set held in memory.
func (cfg Config) EstimateMemory() (MemoryEstimate, error) {
	if err := cfg.Check(); err != nil {
		return MemoryEstimate{}, err
	}
	if err := cfg.normalise(); err != nil {
		return MemoryEstimate{}, err
	}
	elt := int64(4)
	if cfg.Dtype == tensor.Float64 {
		elt = 8
	}
	s := int64(1 + cfg.D + cfg.D*cfg.D)
	b := int64(cfg.Batch)
	var e MemoryEstimate
	var largest int64
	fi, ni := cfg.Layout.InputChannels, cfg.Layout.InputGaussians
	e.Activations = 4 * b * int64(fi*ni) * s * elt // the input, its normalisations and their gradients
	for i, blk := range cfg.Layout.Blocks {
		n := fi * ni * cfg.KernelGaussians
		if cfg.Fused > 0 {
			n = cfg.FusedGaussians(blk, fi, ni)
		}
		np := n
		if blk.Gaussians >= 1 {
			np = blk.Gaussians
		}
		dense := b * int64(blk.Channels) * int64(n) * s * elt
		e.Activations += denseCopies*dense + reducedCopies*b*int64(blk.Channels)*int64(np)*s*elt
		e.Params += 4 * int64(blk.Channels*fi*cfg.KernelGaussians) * s * elt
		if dense > largest {
			largest = dense
			e.Largest = fmt.Sprintf("block %d: %d × %d mixtures of %d Gaussians, %s", i+1, cfg.Batch, blk.Channels, n, FormatBytes(dense))
		}
		fi, ni = blk.Channels, np
	}
	if cfg.DenseHead > 0 {
		e.Params += 4 * int64(fi*cfg.DenseHead+cfg.DenseHead*cfg.Classes) * elt
	}
	e.Bytes = 2*(e.Params+e.Activations) + Overhead
	return e, nil
}

// FormatBytes writes n bytes in the largest of B, KB, MB, GB and TB (powers
// of 1000) that keeps the figure at least 1, with up to one decimal.
func FormatBytes(n int64) string {
	v, units := float64(n), []string{"B", "KB", "MB", "GB", "TB"}
	u := 0
	for v >= 1000 && u < len(units)-1 {
		v /= 1000
		u++
	}
	if u == 0 || v >= 100 {
		return fmt.Sprintf("%.0f %s", v, units[u])
	}
	return fmt.Sprintf("%.1f %s", v, units[u])
}
