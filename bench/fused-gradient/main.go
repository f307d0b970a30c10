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
// With -scan P it also measures how smooth each model's loss is along one
// step of training: from the parameters, every parameter moves by the
// learning rate against the sign of its gradient (Adam's first step), and
// the loss of the same batch is computed at P+1 evenly spaced points of that
// step. The second table gives, averaged over the batches, the loss's drop
// over the step and that drop divided by the one the gradient predicts
// (lr·|g|₁; 1 for a loss linear along the step), its roughness and the
// cosine between the gradients at both ends of the step. The roughness is
// the part of the total variation of the P slopes Δ_i = L_(i+1) − L_i that
// a slope changing in one direction would not have,
// (Σ|Δ_(i+1) − Δ_i| − |Δ_P − Δ_1|) / (2·Σ|Δ_i|): 0 for a smooth convex or
// concave loss at this resolution, about the share of the loss's movement
// made by jumps where discrete decisions change.
//
// Usage:
//
//	go run ./bench/fused-gradient -fused 4,8,16 -batches 10
//	go run ./bench/fused-gradient -run runs/demo -fused 4,16
//	go run ./bench/fused-gradient -fused 16 -batches 5 -scan 40
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
	scan := flag.Int("scan", 0, "points of the loss scan along one training step (0: no scan)")
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
	if *scan < 0 || *scan == 1 {
		log.Fatalf("fused-gradient: -scan %d: want 0 (no scan) or ≥ 2 points (the roughness compares slopes)", *scan)
	}
	if err := compare(*run, fs, *batches, *scan); err != nil {
		log.Fatal(err)
	}
}

// gradients is one model's loss and gradients on every batch: loss[i] and
// grad[i][p] for batch i and learnable parameter p.
type gradients struct {
	loss []float64
	grad [][][]float64
}

func compare(run string, fs []int, batches, scan int) error {
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
	if scan == 0 {
		return nil
	}
	fmt.Printf("\n| F | loss | drop over the step | drop / lr·|g|₁ | roughness | gradient cosine across the step |\n|---|---|---|---|---|---|\n")
	for _, f := range append([]int{0}, fs...) {
		r, err := scanOf(s.Model, f, state, test, batches, scan, s.Run.LR)
		if err != nil {
			return err
		}
		name := strconv.Itoa(f)
		if f == 0 {
			name = "unfused"
		}
		fmt.Printf("| %s | %.4f | %.4f | %.3f | %.3f | %.3f |\n", name, mean(r.loss), mean(r.drop), mean(r.efficiency), mean(r.rough), mean(r.cos))
	}
	return nil
}

// gradientsOf builds the model of cfg with the fused factor f, sets state
// unless it is nil, and returns its loss and gradients on the first batches
// of test, and the indices of each block's kernel parameters among the
// learnables.
func gradientsOf(cfg models.Config, f int, state *models.State, test *dataset.Inputs, batches int) (gradients, [][]int, error) {
	m, vm, err := gradientModel(cfg, f, state)
	if err != nil {
		return gradients{}, nil, err
	}
	defer vm.Close()
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
	var out gradients
	for i := range batches {
		loss, gs, err := lossAndGradient(m, vm, test, i)
		if err != nil {
			return gradients{}, nil, fmt.Errorf("fused ×%d: %w", f, err)
		}
		out.loss = append(out.loss, loss)
		out.grad = append(out.grad, gs)
	}
	return out, blocks, nil
}

// gradientModel builds the model of cfg with the fused factor f, sets state
// unless it is nil, and returns it with a machine that computes its loss and
// the gradient of every learnable parameter.
func gradientModel(cfg models.Config, f int, state *models.State) (*models.Model, G.VM, error) {
	cfg.Fused = f
	m, err := models.Build(cfg)
	if err != nil {
		return nil, nil, err
	}
	if state != nil {
		if err := m.SetState(*state); err != nil {
			return nil, nil, err
		}
	}
	learn := m.Learnables()
	if _, err := G.Grad(m.Loss, learn...); err != nil {
		return nil, nil, err
	}
	return m, G.NewTapeMachine(m.Graph, G.BindDualValues(learn...)), nil
}

// lossAndGradient runs the machine vm of model m on batch i of test and
// returns the loss and the gradient of every learnable parameter.
func lossAndGradient(m *models.Model, vm G.VM, test *dataset.Inputs, i int) (float64, [][]float64, error) {
	idx := make([]int, m.Config.Batch)
	for j := range idx {
		idx[j] = i*m.Config.Batch + j
	}
	if err := m.SetBatch(test, idx); err != nil {
		return 0, nil, err
	}
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		return 0, nil, fmt.Errorf("batch %d: %w", i, err)
	}
	var loss float64
	switch v := m.Loss.Value().Data().(type) {
	case float32:
		loss = float64(v)
	case float64:
		loss = v
	}
	var gs [][]float64
	for _, n := range m.Learnables() {
		gv, err := n.Grad()
		if err != nil {
			return 0, nil, err
		}
		gs = append(gs, models.Float64s(gv.(*tensor.Dense)))
	}
	return loss, gs, nil
}

// scanResult holds, per batch, the loss at the parameters, its drop over
// the step, the roughness of the loss along the step, the cosine between
// the gradients at its ends and the drop divided by the one the gradient
// predicts (see the package comment).
type scanResult struct {
	loss, drop, rough, cos, efficiency []float64
}

// scanOf builds the model of cfg with the fused factor f, sets state unless
// it is nil, and scans its loss on each of the first batches of test along
// one step of lr against the sign of the gradient, at points+1 points.
func scanOf(cfg models.Config, f int, state *models.State, test *dataset.Inputs, batches, points int, lr float64) (scanResult, error) {
	m, vm, err := gradientModel(cfg, f, state)
	if err != nil {
		return scanResult{}, err
	}
	defer vm.Close()
	learn := m.Learnables()
	start := make([][]float64, len(learn))
	for p, n := range learn {
		start[p] = models.Float64s(n.Value().(*tensor.Dense))
	}
	// In training mode every run updates CovScaleNorm's running averages
	// before using them, so each point starts again from the state: the
	// loss is then a function of the parameters alone.
	st0 := m.State()
	// move sets the state and then the parameters to start + t·step.
	move := func(t float64, step [][]float64) error {
		if err := m.SetState(st0); err != nil || step == nil {
			return err
		}
		for p, n := range learn {
			v := make([]float64, len(start[p]))
			for i := range v {
				v[i] = start[p][i] + t*step[p][i]
			}
			models.SetFloat64s(n.Value().(*tensor.Dense), v)
		}
		return nil
	}
	var r scanResult
	for b := range batches {
		if err := move(0, nil); err != nil {
			return scanResult{}, err
		}
		l0, g0, err := lossAndGradient(m, vm, test, b)
		if err != nil {
			return scanResult{}, fmt.Errorf("fused ×%d: %w", f, err)
		}
		step := make([][]float64, len(g0))
		var predicted float64 // the drop the gradient predicts: lr·|g|₁
		for p, g := range g0 {
			step[p] = make([]float64, len(g))
			for i, v := range g {
				switch {
				case v > 0:
					step[p][i] = -lr
				case v < 0:
					step[p][i] = lr
				}
				predicted += lr * math.Abs(v)
			}
		}
		losses := []float64{l0}
		var g1 [][]float64
		for i := 1; i <= points; i++ {
			if err := move(float64(i)/float64(points), step); err != nil {
				return scanResult{}, err
			}
			l, g, err := lossAndGradient(m, vm, test, b)
			if err != nil {
				return scanResult{}, fmt.Errorf("fused ×%d, scan point %d: %w", f, i, err)
			}
			losses, g1 = append(losses, l), g
		}
		var tv, moved float64
		for i := 1; i <= points; i++ {
			moved += math.Abs(losses[i] - losses[i-1])
			if i >= 2 {
				tv += math.Abs((losses[i] - losses[i-1]) - (losses[i-1] - losses[i-2]))
			}
		}
		tv -= math.Abs((losses[points] - losses[points-1]) - (losses[1] - losses[0]))
		c, _ := cosine(g1, g0, allParams(len(g0)))
		r.loss = append(r.loss, l0)
		r.drop = append(r.drop, l0-losses[points])
		r.rough = append(r.rough, tv/(2*moved))
		r.cos = append(r.cos, c)
		r.efficiency = append(r.efficiency, (l0-losses[points])/predicted)
	}
	return r, nil
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
