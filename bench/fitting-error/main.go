// Command fitting-error measures the fitting errors of the ReLU fit and of
// the reductions (the paper's em_split table) on two convolution layers with
// reference-initialised random kernels, and prints them as a Markdown table.
//
// Data: B synthetic MNIST-like 2D mixtures [B, 1, 64] (see mnistLike),
// normalised as the model's norm0 does: per-sample CovScaleNorm to mean
// trace 2, then per-sample weight standardisation (the device's StandardiseScale).
// Layer 1: convolution 1 → 8 (5 kernel Gaussians, radius r1), weights ÷ F_i,
// dense ReLU fit (reference variant), reduction to np1. Between the layers
// CovScaleNorm with the batch statistic per channel (the value the
// reference's running average converges to). Layer 2: convolution 8 → 16
// (radius r2), ÷ F_i, ReLU fit, reduction to np2. Each reduction method
// (MEM, TreeHEM T=2, TreeHEM T=4) runs the whole pipeline with the same data
// and kernels, so layer 2 sees that method's layer-1 output.
//
// The fused rows replace each layer's convolution by the fused
// convolution-fitting to n = min(max(F·N_p, floor), N_v) Gaussians
// (ConvFit; the floor is 1 unless the method names one), then ÷ F_i, the
// dense ReLU fit of those n and the reduction (TreeHEM T=2, or "max":
// keep the N_p largest weights). Their ReLU and reduction columns compare
// with the fused mixture; their "all" column compares the final mixture
// with ReLU of the full convolution, like the unfused rows'. The time
// column is one forward pass of the layer (convolution, fit, reduction) on
// the batch, single-run wall time.
//
// With -data mnist the input is real: the first B MNIST test images
// fitted with 64 Gaussians (as gmcn train fits the paper model's input),
// normalised the same way.
//
// Usage:
//
//	go run ./bench/fitting-error -batch 16 -samples 1000 -seed 1
//	go run ./bench/fitting-error -data mnist -methods 'TreeHEM T=2' -refined=false
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

func main() {
	batch := flag.Int("batch", 16, "batch size B")
	samples := flag.Int("samples", mixture.DefaultFitErrorSamples, "sample points per mixture")
	seed := flag.Uint64("seed", 1, "seed of the data, the kernels and the sample points")
	np1 := flag.Int("np1", 32, "components after the layer-1 reduction")
	np2 := flag.Int("np2", 16, "components after the layer-2 reduction")
	r1 := flag.Float64("r1", 1.5, "layer-1 kernel radius")
	r2 := flag.Float64("r2", 2.0, "layer-2 kernel radius")
	data := flag.String("data", "synthetic", "input mixtures: synthetic (digit-like strokes) or mnist (the first B MNIST test images fitted with 64 Gaussians)")
	dir := flag.String("mnist-dir", "", "folder of the MNIST idx files (default: as gmcn finds them, docs/data.md)")
	only := flag.String("methods", "", "regular expression selecting the methods by name (default: all)")
	refined := flag.Bool("refined", true, "also run every pipeline with the refined ReLU fit (most of the time)")
	flag.Parse()
	sel, err := regexp.Compile(*only)
	if err != nil {
		log.Fatalf("fitting-error: -methods: %v", err)
	}
	rng := rand.New(rand.NewPCG(*seed, 0))
	var x []float64
	var lx mixture.Layout
	switch *data {
	case "synthetic":
		x, lx = mnistLike(rng, *batch)
	case "mnist":
		if x, lx, err = mnistTest(*dir, *batch); err != nil {
			log.Fatal(err)
		}
	default:
		log.Fatalf("fitting-error: -data %q: want synthetic or mnist", *data)
	}
	if err := run(os.Stdout, x, lx, rng, *samples, *seed, *np1, *np2, *r1, *r2, sel, *refined); err != nil {
		log.Fatal(err)
	}
}

// method is one layer pipeline under test: a reduction, after the full
// convolution (fused = 0) or after the fused convolution-fitting to
// fused·N_p Gaussians, whose ReLU fit takes its targets from the fused
// mixture (coarse), the exact convolution (exact, --fused-targets exact) or
// the fused mixture made exact over each centroid's own group (near,
// --fused-targets near at radius 0, the default since 2026-11-28, which
// only the block op computes). The fused
// selection's priority factor of negative groups is negative, or 1 (the
// rule before 2026-11-27) if that is 0; the least fused count is least, or
// 1 (no floor, the count before 2026-11-27) if that is 0.
type method struct {
	name     string
	fused    int
	reduce   func(y, x []float64, l mixture.Layout, np int) error
	targets  targets
	negative float64
	least    int
}

// targets are the kinds of a fused ReLU fit's targets (method.targets).
type targets int

const (
	coarse targets = iota
	exact
	near
)

// kernels are the CPU device's float64 computations, reached through the
// device seam as the ops reach them.
var kernels = ops.CPU().F64

// must ends the program on an error of a computation that prepares data.
func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func keepLargest(y, x []float64, l mixture.Layout, np int) error {
	return kernels.KeepLargest(y, x, l, np)
}

var methods = []method{
	{"MEM", 0, kernels.MEM, coarse, 0, 0},
	{"TreeHEM T=2", 0, treeHEM(2), coarse, 0, 0},
	{"TreeHEM T=4", 0, treeHEM(4), coarse, 0, 0},
	{"fused ×2 + TreeHEM T=2", 2, treeHEM(2), coarse, 0, 0},
	{"fused ×4 + TreeHEM T=2", 4, treeHEM(2), coarse, 0, 0},
	{"fused ×8 + TreeHEM T=2", 8, treeHEM(2), coarse, 0, 0},
	{"fused ×16 + TreeHEM T=2", 16, treeHEM(2), coarse, 0, 0},
	{"fused ×4 exact targets + TreeHEM T=2", 4, treeHEM(2), exact, 0, 0},
	{"fused ×16 exact targets + TreeHEM T=2", 16, treeHEM(2), exact, 0, 0},
	{"fused ×4 negative ½ + TreeHEM T=2", 4, treeHEM(2), coarse, ops.DefaultConvFitNegative, 0},
	{"fused ×16 negative ½ + TreeHEM T=2", 16, treeHEM(2), coarse, ops.DefaultConvFitNegative, 0},
	{"fused ×16 negative ½ floor 96 + TreeHEM T=2", 16, treeHEM(2), coarse, ops.DefaultConvFitNegative, 96},
	{"fused ×2 + max", 2, keepLargest, coarse, 0, 0},
	{"fused ×4 + max", 4, keepLargest, coarse, 0, 0},
	{"fused ×8 + max", 8, keepLargest, coarse, 0, 0},
	{"fused ×16 negative ½ floor 96 near targets + TreeHEM T=2", 16, treeHEM(2), near, ops.DefaultConvFitNegative, 96},
}

func treeHEM(t int) func(y, x []float64, l mixture.Layout, np int) error {
	return func(y, x []float64, l mixture.Layout, np int) error {
		return kernels.TreeHEM(y, x, l, np, device.TreeHEMOptions{Reduction: t})
	}
}

// layerResult is one layer of one pipeline: its errors, the ratio of
// integrals and the wall time of its forward pass.
type layerResult struct {
	label   string
	fe      mixture.FitErrors
	mass    float64
	elapsed time.Duration
}

func run(w *os.File, x []float64, lx mixture.Layout, rng *rand.Rand, samples int, seed uint64, np1, np2 int, r1, r2 float64, sel *regexp.Regexp, refined bool) error {
	k1, lk1 := randomKernels(rng, 8, 1, r1)
	k2, lk2 := randomKernels(rng, 16, 8, r2)
	layers := []layer{{k1, lk1, np1}, {k2, lk2, np2}}
	fmt.Fprintf(w, "| method | layer | N_o → N_p | ReLU RMSE (NRMSE) | refined ReLU RMSE (NRMSE) | reduction RMSE (NRMSE) | all RMSE (NRMSE) | refined all RMSE (NRMSE) | ∫reduced / ∫dense | time | refined time |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range methods {
		if !sel.MatchString(m.name) {
			continue
		}
		heur, err := pipeline(m, x, lx, layers, samples, seed, device.ReLUFitOptions{})
		if err != nil {
			return err
		}
		var ref []layerResult
		// The refined fit evaluates its target away from the centroids,
		// which exact and near-group targets do not give.
		refined := refined && m.targets == coarse
		if refined {
			if ref, err = pipeline(m, x, lx, layers, samples, seed, device.ReLUFitOptions{Refine: true}); err != nil {
				return err
			}
		}
		for li, h := range heur {
			rReLU, rAll, rTime := "not run", "not run", "–"
			if refined {
				r := ref[li]
				rReLU, rAll, rTime = cell(r.fe.ReLU), cell(r.fe.All), ms(r.elapsed)
			}
			fmt.Fprintf(w, "| %s | %d (%s) | %s | %s | %s | %s | %s | %s | %.4f | %s | %s |\n", m.name, li+1, h.label[:strings.Index(h.label, "|")], h.label[strings.Index(h.label, "|")+1:],
				cell(h.fe.ReLU), rReLU, cell(h.fe.Reduction), cell(h.fe.All), rAll, h.mass, ms(h.elapsed), rTime)
		}
	}
	return nil
}

// layer is one convolution layer: its kernels and reduced count.
type layer struct {
	k  []float64
	lk mixture.Layout
	np int
}

// pipeline runs method m with the ReLU fit options opts over the layers,
// each layer on the previous one's output after CovScaleNorm.
func pipeline(m method, x []float64, lx mixture.Layout, layers []layer, samples int, seed uint64, opts device.ReLUFitOptions) ([]layerResult, error) {
	in, lin := x, lx
	var res []layerResult
	for li, layer := range layers {
		start := time.Now()
		var conv, t []float64 // t: the ReLU fit's targets, nil for its own
		var lc mixture.Layout
		var fit ops.ConvFitSelect
		if m.fused > 0 {
			// The model's count: F·N_p, at least the method's floor and at
			// most the convolution's Gaussians.
			n := models.Config{Fused: m.fused, KernelGaussians: layer.lk.N, FusedMin: max(m.least, 1)}.FusedGaussians(models.Block{Gaussians: layer.np}, lin.C, lin.N)
			neg := m.negative
			if neg == 0 {
				neg = 1
			}
			fit = ops.ConvFitSelect{N: n, Negative: neg}
			conv, lc = convolveFused(in, layer.k, lin, layer.lk, fit)
		} else {
			conv, lc = convolve(in, layer.k, lin, layer.lk)
		}
		if m.targets == exact {
			full, lf := convolve(in, layer.k, lin, layer.lk)
			t = exactTargets(full, lf, conv, lc)
		}
		dense := make([]float64, len(conv))
		if m.targets == near {
			// Only the block op computes near-group targets: unreduced, it
			// ends with the ReLU fit.
			b := ops.BlockSpec{Fit: fit, NearTargets: true, ReLU: opts}
			if err := kernels.Block(dense, in, layer.k, lin, layer.lk, b); err != nil {
				return nil, fmt.Errorf("%s layer %d ReLU fit: %w", m.name, li+1, err)
			}
		} else if err := kernels.ReLUFit(dense, conv, nil, t, lc, opts); err != nil {
			return nil, fmt.Errorf("%s layer %d ReLU fit: %w", m.name, li+1, err)
		}
		lr := lc
		lr.N = layer.np
		red := make([]float64, lr.Len())
		if err := m.reduce(red, dense, lc, layer.np); err != nil {
			return nil, fmt.Errorf("%s layer %d reduction: %w", m.name, li+1, err)
		}
		elapsed := time.Since(start)
		if err := mixture.Validate(red, lr); err != nil {
			return nil, fmt.Errorf("%s layer %d reduction output: %w", m.name, li+1, err)
		}
		fe, err := mixture.FitErrorsOf(kernels.Evaluate, conv, dense, red, lc, lr, samples, seed+uint64(li))
		if err != nil {
			return nil, err
		}
		if m.fused > 0 {
			// "all" against ReLU of the full convolution.
			full, lf := convolve(in, layer.k, lin, layer.lk)
			ff, err := mixture.FitErrorsOf(kernels.Evaluate, full, full, red, lf, lr, samples, seed+uint64(li))
			if err != nil {
				return nil, err
			}
			fe.All = ff.All
		}
		res = append(res, layerResult{fmt.Sprintf("%d→%d ch|%d → %d", lin.C, lc.C, lc.N, lr.N), fe, weightSum(red, lr) / weightSum(dense, lc), elapsed})
		in, lin = batchCovScale(red, lr), lr
	}
	return res, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

// weightSum returns the total integral of the batch.
func weightSum(x []float64, l mixture.Layout) float64 {
	var s float64
	for i := 0; i < len(x); i += l.Stride() {
		s += x[i]
	}
	return s
}

func cell(e mixture.FitError) string { return fmt.Sprintf("%.4f (%.3f)", e.RMSE, e.NRMSE) }

// convolve applies the convolution and divides the weights by F_i, as the
// reference model does after every convolution.
func convolve(x, k []float64, lx, lk mixture.Layout) ([]float64, mixture.Layout) {
	ly := device.ConvLayout(lx, lk)
	y := make([]float64, ly.Len())
	must(kernels.Conv(y, x, k, lx, lk))
	for i := 0; i < len(y); i += ly.Stride() {
		y[i] /= float64(lx.C)
	}
	return y, ly
}

// exactTargets returns the full convolution (layout lf) at the centroids of
// the fused mixtures fused (layout lc): the ReLU fit's exact targets.
func exactTargets(full []float64, lf mixture.Layout, fused []float64, lc mixture.Layout) []float64 {
	pts := make([]float64, 0, lc.Mixtures()*lc.N*lc.D)
	for i := 0; i < len(fused); i += lc.Stride() {
		pts = append(pts, fused[i+1:i+1+lc.D]...)
	}
	t := make([]float64, lc.Mixtures()*lc.N)
	must(kernels.Evaluate(t, full, pts, lf, lf.B, lf.C, lc.N))
	return t
}

// convolveFused applies the fused convolution-fitting to s.N Gaussians per
// channel and divides the weights by F_i.
func convolveFused(x, k []float64, lx, lk mixture.Layout, s ops.ConvFitSelect) ([]float64, mixture.Layout) {
	ly := device.ConvFitLayout(lx, lk, s.N)
	y := make([]float64, ly.Len())
	must(kernels.ConvFit(y, x, k, lx, lk, s))
	for i := 0; i < len(y); i += ly.Stride() {
		y[i] /= float64(lx.C)
	}
	return y, ly
}

// randomKernels returns reference-initialised 2D kernels [fo, fi, 5, 7]
// (docs/algorithms.md, "Kernels and convolution"): raw weights N(0, 1) mapped to N(0.1, 1); positions the
// origin and 4 points (sin θ, cos θ), θ = j·π/2, times the radius;
// covariance (r/3)²(A·Aᵀ + εI) with A = I + 0.05·U(−1, 1).
func randomKernels(rng *rand.Rand, fo, fi int, radius float64) ([]float64, mixture.Layout) {
	const nk, d = 5, 2
	l := mixture.Layout{B: fo, C: fi, N: nk, D: d}
	n := fo * fi * nk
	w, p, a := make([]float64, n), make([]float64, n*d), make([]float64, n*d*d)
	for i := range n {
		w[i] = rng.NormFloat64()
		if j := i % nk; j > 0 {
			th := float64(j-1) * 2 * math.Pi / (nk - 1)
			p[i*d], p[i*d+1] = math.Sin(th), math.Cos(th)
		}
		for r := range d {
			for c := range d {
				v := 0.05 * (2*rng.Float64() - 1)
				if r == c {
					v++
				}
				a[(i*d+r)*d+c] = v
			}
		}
	}
	cfg := device.DefaultKernelConfig(radius)
	k := make([]float64, l.Len())
	eps, err := kernels.KernelEpsilon(a, d, cfg)
	must(err)
	must(kernels.AssembleKernel(k, w, p, a, l, cfg, eps))
	return k, l
}

// mnistLike returns b synthetic digit-like mixtures [b, 1, 64, 7] in pixel
// units of a 28×28 image: 2–4 random strokes (segments between points in
// [4, 24]²), 64 Gaussians placed uniformly along them with N(0, 0.5²)
// jitter, elongated along the stroke (standard deviations 1.5 and 0.7) plus
// the input fitting's reg_covar 0.1·I, priors U(0.5, 1.5) normalised to sum
// 1. They are then normalised as norm0 does: CovScaleNorm per sample (mean
// trace 2) and weight standardisation per sample.
func mnistLike(rng *rand.Rand, b int) ([]float64, mixture.Layout) {
	const n, d = 64, 2
	l := mixture.Layout{B: b, C: 1, N: n, D: d}
	x := make([]float64, l.Len())
	st := l.Stride()
	for s := range b {
		strokes := 2 + rng.IntN(3)
		var ends [4][4]float64
		for k := range strokes {
			for j := range 4 {
				ends[k][j] = 4 + 20*rng.Float64()
			}
		}
		var sum float64
		for i := range n {
			g := x[(s*n+i)*st:][:st]
			e := ends[rng.IntN(strokes)]
			t := rng.Float64()
			dx, dy := e[2]-e[0], e[3]-e[1]
			g[1] = e[0] + t*dx + 0.5*rng.NormFloat64()
			g[2] = e[1] + t*dy + 0.5*rng.NormFloat64()
			ln := math.Hypot(dx, dy)
			c, sn := dx/ln, dy/ln
			// Σ = R diag(1.5², 0.7²) Rᵀ + 0.1·I with R the stroke direction.
			a, q := 1.5*1.5, 0.7*0.7
			g[3] = a*c*c + q*sn*sn + 0.1
			g[4] = (a - q) * c * sn
			g[5] = g[4]
			g[6] = a*sn*sn + q*c*c + 0.1
			g[0] = 0.5 + rng.Float64()
			sum += g[0]
		}
		for i := range n {
			x[(s*n+i)*st] /= sum
		}
	}
	return norm0(x, l), l
}

// norm0 normalises input mixtures as the model's first step does:
// CovScaleNorm per sample (mean trace 2), then weight standardisation per
// sample.
func norm0(x []float64, l mixture.Layout) []float64 {
	tau := make([]float64, l.Mixtures())
	must(kernels.MeanTraces(tau, x, l))
	f := make([]float64, l.Mixtures())
	for m, t := range tau {
		f[m], _ = device.CovScaleFactor(l.D, t)
	}
	must(kernels.ScaleMixtures(x, x, l, f))
	sd := make([]float64, l.Mixtures())
	must(kernels.StandardiseScale(sd, x, l))
	y := make([]float64, len(x))
	must(kernels.Standardise(y, x, sd, 1, l))
	return y
}

// mnistTest returns the first b MNIST test images fitted as the paper's
// input, 64 Gaussians each (the input fitting of gmcn train with
// --layers 1/64 …), in float64 and normalised by norm0.
func mnistTest(dir string, b int) ([]float64, mixture.Layout, error) {
	ds, err := mnist.Open("mnist", dir, true)
	if err != nil {
		return nil, mixture.Layout{}, err
	}
	im := ds.Test().(*mnist.ImageSet).Images
	if b > im.N {
		return nil, mixture.Layout{}, fmt.Errorf("fitting-error: -batch %d, but MNIST has %d test images", b, im.N)
	}
	im.N, im.Pixels = b, im.Pixels[:b*im.Rows*im.Cols]
	cfg := dataset.DefaultFitConfig(2)
	cfg.K = 64
	x32, l, err := mnist.FitInputs(im, cfg, nil)
	if err != nil {
		return nil, mixture.Layout{}, err
	}
	x := make([]float64, len(x32))
	for i, v := range x32 {
		x[i] = float64(v)
	}
	return norm0(x, l), l, nil
}

// batchCovScale scales every channel to mean covariance trace D over the
// batch, the CovScaleNorm statistic that the reference's running average
// tracks; the factor is the same for every sample of a channel.
func batchCovScale(x []float64, l mixture.Layout) []float64 {
	tau := make([]float64, l.Mixtures())
	must(kernels.MeanTraces(tau, x, l))
	f := make([]float64, l.Mixtures())
	for c := range l.C {
		var t float64
		for b := range l.B {
			t += tau[b*l.C+c] / float64(l.B)
		}
		s, ok := device.CovScaleFactor(l.D, t)
		if !ok {
			s = 1
		}
		for b := range l.B {
			f[b*l.C+c] = s
		}
	}
	y := make([]float64, len(x))
	must(kernels.ScaleMixtures(y, x, l, f))
	return y
}
