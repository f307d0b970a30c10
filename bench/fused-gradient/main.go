// Command fused-gradient compares the training gradient of the fused
// convolution-fitting with the standard blocks' on the same batches and the
// same parameters, and prints a Markdown table.
//
// A model is built once unfused and once per fused factor F from the same
// settings: the demo preset's initial parameters, or those of a training
// run's checkpoint (-run). Each model computes the loss and the gradient of
// every learnable parameter on the same batches of test inputs, in training
// mode as a training step does. Per block the table gives the cosine
// between the fused and the unfused gradient of the block's kernel
// parameters (weights, positions and covariance factors together) and the
// ratio of their norms, averaged over the batches; "all" takes every
// learnable parameter together. A cosine of 1 means that a step of the
// fused model moves the parameters the same way as one of the unfused
// model.
//
// Usage:
//
//	go run ./bench/fused-gradient -fused 4,8,16 -batches 10
//	go run ./bench/fused-gradient -run runs/demo -fused 4,16
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func main() {
	run := flag.String("run", "", "training run whose checkpoint gives the parameters and settings (default: the demo preset, initial parameters)")
	fused := flag.String("fused", "4,8,16", "comma-separated fused factors F to compare with the unfused blocks")
	batches := flag.Int("batches", 10, "number of batches of test inputs")
	flag.Parse()
	var fs []int
	for f := range strings.SplitSeq(*fused, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			log.Fatalf("fused-gradient: -fused %q: want positive integers separated by commas", *fused)
		}
		fs = append(fs, v)
	}
	if *batches < 1 {
		log.Fatalf("fused-gradient: -batches %d: want ≥ 1", *batches)
	}
	if err := compare(*run, fs, *batches); err != nil {
		log.Fatal(err)
	}
}

// gradients is one model's loss and gradients on every batch: loss[i] and
// grad[i][p] for batch i and learnable parameter p.
type gradients struct {
	loss []float64
	grad [][][]float64
}

func compare(run string, fs []int, batches int) error {
	var s *runspec.Setup
	var state *models.State
	var err error
	if run == "" {
		if s, err = runspec.Resolve(runspec.Presets["demo"]); err != nil {
			return err
		}
	} else {
		if s, err = runspec.LoadSetup(run); err != nil {
			return err
		}
		st, err := checkpoint.Load(filepath.Join(run, runspec.CheckpointFile))
		if err != nil {
			return err
		}
		state = &models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}
	}
	_, test, err := runspec.LoadInputs(s, true, os.Stderr)
	if err != nil {
		return err
	}
	if need := batches * s.Model.Batch; need > test.Len() {
		return fmt.Errorf("fused-gradient: %d batches of %d need %d test inputs, there are %d", batches, s.Model.Batch, need, test.Len())
	}
	base, blocks, err := gradientsOf(s.Model, 0, state, test, batches)
	if err != nil {
		return err
	}
	fmt.Printf("| F | loss (unfused %.4f) |", mean(base.loss))
	for b := range blocks {
		fmt.Printf(" block %d cos | block %d norm ratio |", b+1, b+1)
	}
	fmt.Printf(" all cos | all norm ratio |\n|---|---|%s---|---|\n", strings.Repeat("---|---|", len(blocks)))
	for _, f := range fs {
		g, _, err := gradientsOf(s.Model, f, state, test, batches)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %.4f |", f, mean(g.loss))
		groups := append(blocks, allParams(len(g.grad[0])))
		for _, group := range groups {
			var cos, ratio []float64
			for i := range g.grad {
				c, r := cosine(g.grad[i], base.grad[i], group)
				cos, ratio = append(cos, c), append(ratio, r)
			}
			fmt.Printf(" %.3f | %.3f |", mean(cos), mean(ratio))
		}
		fmt.Println()
	}
	return nil
}

// gradientsOf builds the model of cfg with the fused factor f, sets state
// unless it is nil, and returns its loss and gradients on the first batches
// of test, and the indices of each block's kernel parameters among the
// learnables.
func gradientsOf(cfg models.Config, f int, state *models.State, test *dataset.Inputs, batches int) (gradients, [][]int, error) {
	cfg.Fused = f
	m, err := models.Build(cfg)
	if err != nil {
		return gradients{}, nil, err
	}
	if state != nil {
		if err := m.SetState(*state); err != nil {
			return gradients{}, nil, err
		}
	}
	learn := m.Learnables()
	var blocks [][]int
	p := 0
	for _, k := range m.Kernels {
		var idx []int
		for range k.Learnables() {
			idx = append(idx, p)
			p++
		}
		blocks = append(blocks, idx)
	}
	if _, err := G.Grad(m.Loss, learn...); err != nil {
		return gradients{}, nil, err
	}
	vm := G.NewTapeMachine(m.Graph, G.BindDualValues(learn...))
	defer vm.Close()
	var out gradients
	for i := range batches {
		idx := make([]int, cfg.Batch)
		for j := range idx {
			idx[j] = i*cfg.Batch + j
		}
		if err := m.SetBatch(test, idx); err != nil {
			return gradients{}, nil, err
		}
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			return gradients{}, nil, fmt.Errorf("fused ×%d, batch %d: %w", f, i, err)
		}
		switch v := m.Loss.Value().Data().(type) {
		case float32:
			out.loss = append(out.loss, float64(v))
		case float64:
			out.loss = append(out.loss, v)
		}
		var gs [][]float64
		for _, n := range learn {
			gv, err := n.Grad()
			if err != nil {
				return gradients{}, nil, err
			}
			gs = append(gs, models.Float64s(gv.(*tensor.Dense)))
		}
		out.grad = append(out.grad, gs)
	}
	return out, blocks, nil
}

// allParams returns the indices 0 … n−1.
func allParams(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// cosine returns the cosine between the gradients a and b over the
// parameters group, and the ratio of their norms |a|/|b|.
func cosine(a, b [][]float64, group []int) (cos, ratio float64) {
	var ab, aa, bb float64
	for _, p := range group {
		for i, v := range a[p] {
			ab += v * b[p][i]
			aa += v * v
			bb += b[p][i] * b[p][i]
		}
	}
	return ab / math.Sqrt(aa*bb), math.Sqrt(aa / bb)
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
