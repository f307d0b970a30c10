//go:build gmcuda

package cudaops

import (
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Thread-block sizes. tileBlock is the tile length of the O(N²) kernels: 128
// prepared Gaussians of float64 (15 values each) take 15 KiB of shared
// memory, well inside the 48 KiB every GPU since compute 3.0 offers.
const (
	flatBlock   = 256
	warpsBlock  = 256 // 8 mixtures per block for the warp-per-mixture kernels
	tileBlock   = 128
	reduceBlock = 128
	// standardiseBlock threads each hold a prepared float64 Gaussian
	// (prepLen values) and 6 reduction values: 42 KiB of shared memory.
	standardiseBlock = 256
	prepLen          = 15 // sizeof(GmPrep<T>)/sizeof(T): coef, norm, w, μ[3], Σ⁻¹[9]
	reluLen          = 17 // sizeof(GmRelu<T>)/sizeof(T): an, xn, a, x, norm, μ[3], Σ⁻¹[9]
	maxGridY         = 65535
)

// seq runs the steps of one launcher on the Device's thread and keeps the
// first error, so a launcher reads as its list of transfers and kernels.
type seq struct {
	d   *Device
	err error
}

func in[T Float](s *seq, slot int, h []T) devPtr {
	if s.err != nil {
		return 0
	}
	p, err := upload(s.d, slot, h)
	s.err = err
	return p
}

// inTo copies h into the device memory p, which has room for it, and
// returns p.
func inTo[T Float](s *seq, p devPtr, h []T) devPtr {
	if s.err == nil {
		s.err = uploadTo(s.d, p, h)
	}
	return p
}

func out[T Float](s *seq, slot, count int) devPtr {
	if s.err != nil {
		return 0
	}
	p, err := output[T](s.d, slot, count)
	s.err = err
	return p
}

func get[T Float](s *seq, h []T, p devPtr) {
	if s.err == nil {
		s.err = download(s.d, h, p)
	}
}

func (s *seq) launch(name string, grid [2]int, block, shared int, args ...any) {
	if s.err == nil {
		s.err = s.d.launch(name, grid, block, shared, args...)
	}
}

// run executes f on the Device's thread with a fresh seq and waits for the
// kernels it launched.
func (d *Device) run(f func(s *seq)) error {
	return d.do(func() error {
		s := &seq{d: d}
		f(s)
		if err := d.finish(); s.err == nil {
			s.err = err
		}
		return s.err
	})
}

func checkTiles(n int) error {
	if blocks(n, tileBlock) > maxGridY {
		return errors.Errorf("cudaops: %d items exceed the %d×%d a grid column holds", n, maxGridY, tileBlock)
	}
	return nil
}

// Integrate is device.Kernels.Integrate on the GPU: y[m] = Σ_k w[m,k].
func (c Kernels[T]) Integrate(y, x []T, l mixture.Layout) error {
	return c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		py := out[T](s, slotOut, len(y))
		launchIntegrate[T](s, py, px, l)
		get(s, y, py)
	})
}

// launchIntegrate writes the integrals of the device mixtures px (layout l)
// into py.
func launchIntegrate[T Float](s *seq, py, px devPtr, l mixture.Layout) {
	s.launch("gm_integrate"+suffix[T](), [2]int{blocks(l.Mixtures(), warpsBlock/32), 1}, warpsBlock, 0,
		py, px, l.Mixtures(), l.N, l.Stride())
}

// launchIntegrateBackward writes into pd the gradient (layout l) of
// Integrate for the gradient pg of the integrals.
func launchIntegrateBackward[T Float](s *seq, pd, pg devPtr, l mixture.Layout) {
	s.launch("gm_integrate_backward"+suffix[T](), [2]int{blocks(l.Len(), flatBlock), 1}, flatBlock, 0,
		pd, pg, l.Len(), l.N, l.Stride())
}

// IntegrateBackward is device.Kernels.IntegrateBackward on the GPU.
func (c Kernels[T]) IntegrateBackward(dx, g []T, l mixture.Layout) error {
	return c.d.run(func(s *seq) {
		pg := in(s, slotIn0, g)
		pd := out[T](s, slotOut, len(dx))
		launchIntegrateBackward[T](s, pd, pg, l)
		get(s, dx, pd)
	})
}

// Conv is device.Kernels.Conv on the GPU: y (layout device.ConvLayout(lx, lk)) is the
// convolution of the data x with the kernels k.
func (c Kernels[T]) Conv(y, x, k []T, lx, lk mixture.Layout) error {
	return c.conv("gm_conv", y, x, k, lx, lk, blocks(len(y), flatBlock), flatBlock, 0)
}

// ConvBackwardData is device.Kernels.ConvBackwardData on the GPU.
func (c Kernels[T]) ConvBackwardData(dx, g, k []T, lx, lk mixture.Layout) error {
	return c.conv("gm_conv_backward_data", dx, g, k, lx, lk, blocks(len(dx), flatBlock), flatBlock, 0)
}

// ConvBackwardKernels is device.Kernels.ConvBackwardKernels on the GPU.
func (c Kernels[T]) ConvBackwardKernels(dk, g, x []T, lx, lk mixture.Layout) error {
	return c.conv("gm_conv_backward_kernels", dk, g, x, lx, lk, lk.B*lk.C*lk.N, reduceBlock, reduceBlock*int(sizeOf[T]()))
}

// conv runs the convolution kernel name on the inputs a and b into dst, on
// a grid of gridX blocks of block threads with smem bytes of shared memory.
func (c Kernels[T]) conv(name string, dst, a, b []T, lx, lk mixture.Layout, gridX, block, smem int) error {
	return c.d.run(func(s *seq) {
		pa, pb := in(s, slotIn0, a), in(s, slotIn1, b)
		pd := out[T](s, slotOut, len(dst))
		launchConv[T](s, name, gridX, block, smem, pd, pa, pb, lx, lk)
		get(s, dst, pd)
	})
}

// launchConv runs the convolution kernel name (or one of its backward
// kernels) on device operands.
func launchConv[T Float](s *seq, name string, gridX, block, smem int, pd, pa, pb devPtr, lx, lk mixture.Layout) {
	s.launch(name+suffix[T](), [2]int{gridX, 1}, block, smem, pd, pa, pb, lx.B, lx.C, lx.N, lk.B, lk.N, lx.Stride())
}

// Evaluate is device.Kernels.Evaluate on the GPU: the mixtures x (layout l) at the
// point sets pts [pb, pc, m, D], into y [B, C, m].
func (c Kernels[T]) Evaluate(y, x, pts []T, l mixture.Layout, pb, pc, m int) error {
	if err := checkTiles(m); err != nil {
		return err
	}
	return c.d.run(func(s *seq) {
		px, pp := in(s, slotIn0, x), in(s, slotIn1, pts)
		py := out[T](s, slotOut, len(y))
		launchEvaluate[T](s, py, px, pp, l, pb, pc, m)
		get(s, y, py)
	})
}

// EvaluateBackwardMixture is device.Kernels.EvaluateBackwardMixture on the GPU.
func (c Kernels[T]) EvaluateBackwardMixture(dx, x, pts, g []T, l mixture.Layout, pb, pc, m int) error {
	if err := checkTiles(l.N); err != nil {
		return err
	}
	return c.d.run(func(s *seq) {
		px, pp, pg := in(s, slotIn0, x), in(s, slotIn1, pts), in(s, slotIn2, g)
		pd := out[T](s, slotOut, len(dx))
		launchEvaluateBackwardMixture[T](s, pd, px, pp, pg, l, pb, pc, m)
		get(s, dx, pd)
	})
}

// EvaluateBackwardPoints is device.Kernels.EvaluateBackwardPoints on the GPU.
func (c Kernels[T]) EvaluateBackwardPoints(dp, x, pts, g []T, l mixture.Layout, pb, pc, m int) error {
	if err := checkTiles(m); err != nil {
		return err
	}
	return c.d.run(func(s *seq) {
		px, pp, pg := in(s, slotIn0, x), in(s, slotIn1, pts), in(s, slotIn2, g)
		pd := out[T](s, slotOut, len(dp))
		launchEvaluateBackwardPoints[T](s, pd, px, pp, pg, l, pb, pc, m)
		get(s, dp, pd)
	})
}

// launchEvaluate writes into py the device mixtures px (layout l) at the
// device point sets pp [pb, pc, m, D]; m must pass checkTiles.
func launchEvaluate[T Float](s *seq, py, px, pp devPtr, l mixture.Layout, pb, pc, m int) {
	s.launch("gm_evaluate"+suffix[T](), [2]int{l.Mixtures(), blocks(m, tileBlock)}, tileBlock, tileBlock*prepLen*int(sizeOf[T]()),
		py, px, pp, l.C, l.N, l.D, pb, pc, m)
}

// launchEvaluateBackwardMixture writes into pd the gradient of
// launchEvaluate's mixtures for the gradient pg of its values; l.N must
// pass checkTiles.
func launchEvaluateBackwardMixture[T Float](s *seq, pd, px, pp, pg devPtr, l mixture.Layout, pb, pc, m int) {
	s.launch("gm_evaluate_backward_mixture"+suffix[T](), [2]int{l.Mixtures(), blocks(l.N, tileBlock)}, tileBlock, tileBlock*(l.D+1)*int(sizeOf[T]()),
		pd, px, pp, pg, l.C, l.N, l.D, pb, pc, m)
}

// launchEvaluateBackwardPoints writes into pd the gradient of
// launchEvaluate's points for the gradient pg of its values.
func launchEvaluateBackwardPoints[T Float](s *seq, pd, px, pp, pg devPtr, l mixture.Layout, pb, pc, m int) {
	s.launch("gm_evaluate_backward_points"+suffix[T](), [2]int{pb * pc, blocks(m, tileBlock)}, tileBlock, tileBlock*prepLen*int(sizeOf[T]()),
		pd, px, pp, pg, l.B, l.C, l.N, l.D, pb, pc, m)
}

// reluArgs turns resolved options into the kernels' paper flag and
// constants.
func reluArgs(opts device.ReLUFitOptions) (reluParams, error) {
	p, err := opts.Resolve()
	r := reluParams{coarse: p.Coarse, floor: p.Floor, off: p.Off}
	if p.Paper {
		r.paper = 1
	}
	return r, err
}

// ReLUFit is device.Kernels.ReLUFit on the GPU, constants and given targets
// included. Like the CPU kernel it reports a non-finite output weight, which
// only extreme covariances can produce. The refined fit has no GPU kernel
// yet: it runs on the fallback, forward and backward.
func (c Kernels[T]) ReLUFit(y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) error {
	if !onGPU(device.ReLUFitCall("ReLUFit", kappa != nil, t != nil, opts)) {
		return c.cpu.ReLUFit(y, x, kappa, t, l, opts)
	}
	r, err := reluCall(kappa, t, l, opts)
	if err != nil {
		return err
	}
	err = c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		pk, pt := optIn(s, slotIn1, kappa), optIn(s, slotIn2, t)
		py := out[T](s, slotOut, len(y))
		launchReLUFit[T](s, py, px, pk, pt, l, r)
		get(s, y, py)
	})
	if err != nil {
		return err
	}
	return finite(y, l, "ReLU fit output")
}

// ReLUFitSaving is ReLUFit: the GPU kernels keep nothing between the passes,
// since the backward recomputes the sums at the price of one more launch.
// The refined fit's saving forward runs on the fallback, for the fallback's
// backward.
func (c Kernels[T]) ReLUFitSaving(y, x, kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) (device.Saved, error) {
	if !onGPU(device.ReLUFitCall("ReLUFitSaving", kappa != nil, t != nil, opts)) {
		return c.cpu.ReLUFitSaving(y, x, kappa, t, l, opts)
	}
	return nil, c.ReLUFit(y, x, kappa, t, l, opts)
}

// ReLUFitBackward is device.Kernels.ReLUFitBackward on the GPU: a pass over the
// centroids computes ∂L/∂t, ∂L/∂e, ∂L/∂b and the direct ∂L/∂x into device
// scratch (and ∂L/∂t into dt for given targets), a pass over the components
// reads it and writes ∂L/∂x, and with dkappa a pass per mixture sums ∂L/∂κ;
// the scratch never leaves the device. ReLUFitSaving saves nothing on the
// GPU, so saved is nil there; the refined fit's gradient (which runs through
// the refinement) is the fallback's, with its own saved state.
func (c Kernels[T]) ReLUFitBackward(dx, dkappa, dt, x, kappa, t, g []T, l mixture.Layout, opts device.ReLUFitOptions, saved device.Saved) error {
	if !onGPU(device.ReLUFitCall("ReLUFitBackward", kappa != nil || dkappa != nil, t != nil || dt != nil, opts)) {
		return c.cpu.ReLUFitBackward(dx, dkappa, dt, x, kappa, t, g, l, opts, saved)
	}
	r, err := reluCall(kappa, t, l, opts)
	if err != nil {
		return err
	}
	if dt != nil && t == nil {
		return errors.New("ReLU fit backward: a gradient of the targets asked for without targets")
	}
	err = c.d.run(func(s *seq) {
		px, pg := in(s, slotIn0, x), in(s, slotIn1, g)
		pk, pt := optIn(s, slotIn2, kappa), optIn(s, slotIn3, t)
		pd := out[T](s, slotOut, l.Len())
		var pdk, pdt devPtr
		if dkappa != nil {
			pdk = out[T](s, slotOut1, l.Mixtures())
		}
		if dt != nil {
			pdt = out[T](s, slotOut2, l.Mixtures()*l.N)
		}
		launchReLUFitBackward[T](s, pd, pdk, pdt, px, pk, pt, pg, l, r)
		if dx != nil {
			get(s, dx, pd)
		}
		if dkappa != nil {
			get(s, dkappa, pdk)
		}
		if dt != nil {
			get(s, dt, pdt)
		}
	})
	if err != nil {
		return err
	}
	if dx != nil {
		if err := finite(dx, l, "ReLU fit gradient"); err != nil {
			return err
		}
	}
	if err := mixture.CheckFinite(dt); err != nil {
		return errors.Wrap(err, "ReLU fit: gradient of the targets")
	}
	return errors.Wrap(mixture.CheckFinite(dkappa), "ReLU fit: gradient of the constant")
}

// reluCall resolves opts into the kernels' arguments and checks the
// lengths of the constants kappa (one per mixture) and the given targets t
// (one per component), each nil where absent, and the mixtures' size.
func reluCall[T Float](kappa, t []T, l mixture.Layout, opts device.ReLUFitOptions) (reluParams, error) {
	r, err := reluArgs(opts)
	if err != nil {
		return r, err
	}
	if kappa != nil && len(kappa) != l.Mixtures() {
		return r, errors.Errorf("ReLU fit: %d constants for %d mixtures", len(kappa), l.Mixtures())
	}
	if t != nil && len(t) != l.Mixtures()*l.N {
		return r, errors.Errorf("ReLU fit targets: %d values for %d components", len(t), l.Mixtures()*l.N)
	}
	return r, checkTiles(l.N)
}

// optIn uploads h into slot, or returns the null pointer, which the kernels
// read as absent, for a nil h.
func optIn[T Float](s *seq, slot int, h []T) devPtr {
	if h == nil {
		return 0
	}
	return in(s, slot, h)
}

// launchReLUFit runs the ReLU fit's kernel on device operands; pk (the
// constants) and pt (given targets) may be null.
func launchReLUFit[T Float](s *seq, py, px, pk, pt devPtr, l mixture.Layout, r reluParams) {
	s.launch("gm_relufit"+suffix[T](), [2]int{l.Mixtures(), blocks(l.N, tileBlock)}, tileBlock, tileBlock*reluLen*int(sizeOf[T]()),
		py, px, pk, pt, l.N, l.D, r.paper, r.coarse, r.floor, r.off)
}

// reluWork is the per-component scratch of the ReLU fit's backward kernels
// (GM_RELU_WORK in relufit.cu).
const reluWork = 5

// launchReLUFitBackward runs the ReLU fit's backward kernels on device
// operands, with their per-component scratch in slotWork: ∂L/∂x into pd,
// and ∂L/∂κ into pdk and ∂L/∂t into pdt unless they are null; the constants
// pk and the given targets pt may be null.
func launchReLUFitBackward[T Float](s *seq, pd, pdk, pdt, px, pk, pt, pg devPtr, l mixture.Layout, r reluParams) {
	sz := int(sizeOf[T]())
	grid := [2]int{l.Mixtures(), blocks(l.N, tileBlock)}
	pw := out[T](s, slotWork, l.Mixtures()*l.N*reluWork)
	s.launch("gm_relufit_backward_point"+suffix[T](), grid, tileBlock, tileBlock*reluLen*sz,
		pw, pdt, px, pk, pt, pg, l.N, l.D, r.paper, r.coarse, r.floor, r.off)
	s.launch("gm_relufit_backward_component"+suffix[T](), grid, tileBlock, tileBlock*(reluLen+l.D+2)*sz,
		pd, px, pk, pt, pg, pw, l.N, l.D, r.paper, r.coarse, r.floor)
	if pdk != 0 {
		s.launch("gm_relufit_backward_kappa"+suffix[T](), [2]int{blocks(l.Mixtures(), tileBlock), 1}, tileBlock, 0,
			pdk, pk, pw, l.Mixtures(), l.N)
	}
}

// finiteIntegrals reports the first non-finite value of integrals y [B·C]
// (layout l's mixtures).
func finiteIntegrals[T Float](y []T, l mixture.Layout, what string) error {
	if m := mixture.FirstNonFinite(y); m >= 0 {
		return errors.Errorf("cudaops: %s of mixture (b=%d, c=%d) is %v", what, m/l.C, m%l.C, y[m])
	}
	return nil
}

// finite reports the first non-finite value of a result of layout l.
func finite[T Float](v []T, l mixture.Layout, what string) error {
	if i := mixture.FirstNonFinite(v); i >= 0 {
		m, k := i/(l.N*l.Stride()), (i/l.Stride())%l.N
		return errors.Errorf("cudaops: %s of mixture (b=%d, c=%d) component %d is %v", what, m/l.C, m%l.C, k, v[i])
	}
	return nil
}

// MeanTraces is device.Kernels.MeanTraces on the GPU (sums in float64).
func (c Kernels[T]) MeanTraces(tau []float64, x []T, l mixture.Layout) error {
	return c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		pt := out[float64](s, slotOut, len(tau))
		s.launch("gm_mean_traces"+suffix[T](), [2]int{blocks(l.Mixtures(), warpsBlock/32), 1}, warpsBlock, 0,
			pt, px, l.Mixtures(), l.N, l.D)
		get(s, tau, pt)
	})
}

// ScaleMixtures is device.Kernels.ScaleMixtures on the GPU; with the
// incoming gradient as x it is also ScaleMixturesBackward.
func (c Kernels[T]) ScaleMixtures(y, x []T, l mixture.Layout, sc []T) error {
	return c.d.run(func(s *seq) {
		px, ps := in(s, slotIn0, x), in(s, slotIn1, sc)
		py := out[T](s, slotOut, len(y))
		s.launch("gm_scale_mixtures"+suffix[T](), [2]int{blocks(len(y), flatBlock), 1}, flatBlock, 0,
			py, px, ps, len(y), l.N, l.D)
		get(s, y, py)
	})
}

// CovScaleBackward is device.Kernels.CovScaleBackward on the GPU.
func (c Kernels[T]) CovScaleBackward(dx, g, x []T, l mixture.Layout, sc []T, tau []float64) error {
	return c.d.run(func(s *seq) {
		pg, px, ps := in(s, slotIn0, g), in(s, slotIn1, x), in(s, slotIn2, sc)
		pt := in(s, slotIn3, tau)
		pd := out[T](s, slotOut, len(dx))
		s.launch("gm_cov_scale_backward"+suffix[T](), [2]int{blocks(l.Mixtures(), warpsBlock/32), 1}, warpsBlock, 0,
			pd, pg, px, ps, pt, l.Mixtures(), l.N, l.D)
		get(s, dx, pd)
	})
}

// KernelEpsilon is device.Kernels.KernelEpsilon on the GPU: CovEpsilon·max(1, max|A·Aᵀ|)
// over the d×d factors a, the maximum found on the GPU and ε rounded on the
// host as cfg.Epsilon says.
func (c Kernels[T]) KernelEpsilon(a []T, dim int, cfg device.KernelConfig) (float64, error) {
	count := len(a) / (dim * dim)
	var mx [1]float64 // +0.0, whose bits are 0: the start of the atomicMax on the bits
	err := c.d.run(func(s *seq) {
		pa := in(s, slotIn0, a)
		pm := in(s, slotOut, mx[:])
		s.launch("gm_kernel_gram_max"+suffix[T](), [2]int{blocks(count, reduceBlock), 1}, reduceBlock, reduceBlock*8,
			pm, pa, count, dim)
		get(s, mx[:], pm)
	})
	if err != nil {
		return 0, err
	}
	return cfg.Epsilon(mx[0]), nil
}

// AssembleKernel is device.Kernels.AssembleKernel on the GPU.
func (c Kernels[T]) AssembleKernel(y, w, p, a []T, l mixture.Layout, cfg device.KernelConfig, eps float64) error {
	count := l.Mixtures() * l.N
	return c.d.run(func(s *seq) {
		pw, pp, pa := in(s, slotIn0, w), in(s, slotIn1, p), in(s, slotIn2, a)
		py := out[T](s, slotOut, len(y))
		s.launch("gm_assemble_kernel"+suffix[T](), [2]int{blocks(count, flatBlock), 1}, flatBlock, 0,
			py, pw, pp, pa, count, l.D, cfg.WeightSD, cfg.WeightMean, cfg.Radius, eps)
		get(s, y, py)
	})
}

// AssembleKernelBackward computes the gradients of the raw weights,
// positions and factors of AssembleKernel in one kernel; a nil destination is
// computed into device scratch and not downloaded.
func (c Kernels[T]) AssembleKernelBackward(dw, dp, da, g, a []T, l mixture.Layout, cfg device.KernelConfig) error {
	count := l.Mixtures() * l.N
	return c.d.run(func(s *seq) {
		pg, pa := in(s, slotIn0, g), in(s, slotIn1, a)
		pw, pp, pd := out[T](s, slotOut, count), out[T](s, slotOut1, count*l.D), out[T](s, slotOut2, count*l.D*l.D)
		s.launch("gm_assemble_kernel_backward"+suffix[T](), [2]int{blocks(count, flatBlock), 1}, flatBlock, 0,
			pw, pp, pd, pg, pa, count, l.D, cfg.WeightSD, cfg.Radius)
		for _, o := range []struct {
			h []T
			p devPtr
		}{{dw, pw}, {dp, pp}, {da, pd}} {
			if o.h != nil {
				get(s, o.h, o.p)
			}
		}
	})
}

// StandardiseScale is device.Kernels.StandardiseScale on the GPU
// (standardise.cu): one block per mixture, float64 throughout.
func (c Kernels[T]) StandardiseScale(sd []float64, x []T, l mixture.Layout) error {
	return c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		ps := out[float64](s, slotOut, len(sd))
		s.launch("gm_standardise_scale"+suffix[T](), [2]int{l.Mixtures(), 1}, standardiseBlock, standardiseBlock*(prepLen+6)*8,
			ps, px, l.C, l.N, l.D, device.StandardisePoints(l.D))
		get(s, sd, ps)
	})
}

// KeepLargest is device.Kernels.KeepLargest on the GPU (keeplargest.cu): one
// block per mixture ranks every component against the others.
func (c Kernels[T]) KeepLargest(y, x []T, l mixture.Layout, np int) error {
	return c.d.run(func(s *seq) {
		px := in(s, slotIn0, x)
		py := out[T](s, slotOut, len(y))
		launchKeepLargest[T](s, "gm_keep_largest", l, np, py, px)
		get(s, y, py)
	})
}

// KeepLargestBackward is device.Kernels.KeepLargestBackward on the GPU.
func (c Kernels[T]) KeepLargestBackward(dx, x, g []T, l mixture.Layout, np int) error {
	return c.d.run(func(s *seq) {
		px, pg := in(s, slotIn0, x), in(s, slotIn1, g)
		pd := out[T](s, slotOut, len(dx))
		launchKeepLargest[T](s, "gm_keep_largest_backward", l, np, pd, px, pg)
		get(s, dx, pd)
	})
}

// launchKeepLargest runs keep-largest's kernel name on the device operands
// ptrs (destination first).
func launchKeepLargest[T Float](s *seq, name string, l mixture.Layout, np int, ptrs ...devPtr) {
	args := make([]any, 0, len(ptrs)+3)
	for _, p := range ptrs {
		args = append(args, p)
	}
	s.launch(name+suffix[T](), [2]int{l.Mixtures(), 1}, flatBlock, flatBlock*int(sizeOf[T]()), append(args, l.N, l.Stride(), np)...)
}
