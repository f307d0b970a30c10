package ops

import (
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewCovScale returns the per-sample CovScaleNorm op: every mixture (b, c) of
// a packed batch [B, C, N, 1+D+D·D] is scaled in space by s = sqrt(D/τ),
// τ = mean_k tr Σ_k, i.e. μ ← s·μ and Σ ← s²·Σ with weights unchanged, so
// that its mean covariance trace becomes D. The gradient flows through s.
// The reference applies it once, to the network input.
func NewCovScale(dev *device.Device) G.Op {
	return newOp(dev, covScaleKernel[float32]{}, covScaleKernel[float64]{})
}

type covScaleSpec struct {
	mixtureOp
	noParams
}

func (covScaleSpec) name() string           { return "gm.CovScale" }
func (covScaleSpec) computations() []string { return []string{"MeanTraces", "ScaleMixtures"} }

func (covScaleSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	return sameMixture(in[0])
}

type covScaleKernel[T Float] struct{ covScaleSpec }

func (covScaleKernel[T]) gradKernel(int) gradComputation[T] { return covScaleGradKernel[T]{} }

func (covScaleKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	s, _, err := covScaleFactors(dev, in[0].data, l)
	if err != nil {
		return err
	}
	return dev.ScaleMixtures(out.data, in[0].data, l, s)
}

// covScaleFactors returns the per-mixture factors s = sqrt(D/τ) and the mean
// traces τ of x, or an error naming the first mixture without a factor.
func covScaleFactors[T Float](dev device.Kernels[T], x []T, l mixture.Layout) ([]T, []float64, error) {
	tau := make([]float64, l.Mixtures())
	if err := dev.MeanTraces(tau, x, l); err != nil {
		return nil, nil, err
	}
	s := make([]T, len(tau))
	for m, v := range tau {
		f, ok := device.CovScaleFactor(l.D, v)
		if !ok {
			return nil, nil, errors.Errorf(`input "mixture": mixture (b=%d, c=%d) has mean covariance trace %g, expected a positive finite value`, m/l.C, m%l.C, v)
		}
		s[m] = T(f)
	}
	return s, tau, nil
}

// covScaleGradKernel computes ∂L/∂mixture of the per-sample CovScaleNorm from
// (mixture, output, grad), recomputing s and τ from the input.
type covScaleGradKernel[T Float] struct{ noParams }

func (covScaleGradKernel[T]) name() string { return "gm.CovScaleGrad" }
func (covScaleGradKernel[T]) computations() []string {
	return []string{"MeanTraces", "CovScaleBackward"}
}

func (covScaleGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(in[0].shape)
	s, tau, err := covScaleFactors(dev, in[0].data, l)
	if err != nil {
		return err
	}
	return dev.CovScaleBackward(out.data, in[2].data, in[0].data, l, s, tau)
}

// CovScaleNorm is the running-average CovScaleNorm op the reference applies
// after every ReLU-fitting block. It scales every mixture of channel c by one
// factor s[c] = sqrt(D/τ̄[c]), μ ← s·μ and Σ ← s²·Σ with weights unchanged,
// where τ̄[c] is a running average of the channel's mean covariance trace
// (over batch and components), initialised to 1.
//
// In training mode every forward execution first updates
// τ̄ ← (1−α)·τ̄ + α·τ_batch with α = min(B/1000, 0.2) and then scales by the
// updated average; in evaluation mode τ̄ is only read. In both modes s is
// detached: no gradient flows into the statistic, which is what lets the
// average warm up over ≈1/α batches without fighting the optimiser.
//
// The update happens in Do, which a TapeMachine runs once per step; the
// gradient op never touches the state. One CovScaleNorm may be applied in
// several graphs (a training and an evaluation graph of other batch sizes)
// and then shares its running average between them. Unlike Gorgonia's
// BatchNormOp, SetTraining never resets the statistics.
//
// Gorgonia's machines set the mode of every TrainModeOp when they are built:
// NewTapeMachine switches the op to training unless given
// gorgonia.EvalMode(). With a shared op, building the evaluation machine
// therefore also changes the mode seen by the training graph; call
// SetTraining at the start of each phase.
type CovScaleNorm struct {
	*op
	st *covScaleState
}

type covScaleState struct {
	mu       sync.Mutex
	training bool
	running  []float64
}

// NewCovScaleNorm returns a running-average CovScaleNorm for mixtures with
// the given number of channels, in evaluation mode with τ̄ = 1.
func NewCovScaleNorm(dev *device.Device, channels int) (*CovScaleNorm, error) {
	if channels < 1 {
		return nil, errors.Errorf("gm.CovScaleNorm: channels must be ≥ 1, got %d", channels)
	}
	st := &covScaleState{running: make([]float64, channels)}
	for i := range st.running {
		st.running[i] = 1
	}
	s := covScaleNormSpec{st: st}
	return &CovScaleNorm{op: newOp(dev, covScaleNormKernel[float32]{s}, covScaleNormKernel[float64]{s}), st: st}, nil
}

// SetTraining switches between training (update the running average on every
// forward) and evaluation (use it as it is). It implements gorgonia.TrainModeOp.
func (c *CovScaleNorm) SetTraining(training bool) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	c.st.training = training
	return nil
}

// Training reports whether the op is in training mode.
func (c *CovScaleNorm) Training() bool {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return c.st.training
}

// Running returns a copy of the running mean traces τ̄, one per channel, for
// checkpoints.
func (c *CovScaleNorm) Running() []float64 {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return append([]float64(nil), c.st.running...)
}

// SetRunning restores the running mean traces from a checkpoint. It needs one
// positive finite value per channel.
func (c *CovScaleNorm) SetRunning(tau []float64) error {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if len(tau) != len(c.st.running) {
		return errors.Errorf("gm.CovScaleNorm: SetRunning needs %d values (one per channel), got %d", len(c.st.running), len(tau))
	}
	for i, v := range tau {
		if !(v > 0) || math.IsInf(v, 0) {
			return errors.Errorf("gm.CovScaleNorm: SetRunning: channel %d has mean trace %g, expected a positive finite value", i, v)
		}
	}
	copy(c.st.running, tau)
	return nil
}

var _ G.TrainModeOp = (*CovScaleNorm)(nil)

type covScaleNormSpec struct {
	mixtureOp
	st *covScaleState
}

func (covScaleNormSpec) name() string { return "gm.CovScaleNorm" }
func (k covScaleNormSpec) writeParams(w io.Writer) {
	fmt.Fprintf(w, "channels=%d", len(k.st.running))
}

// computations are those of training mode; evaluation mode skips MeanTraces.
func (covScaleNormSpec) computations() []string { return []string{"MeanTraces", "ScaleMixtures"} }

func (k covScaleNormSpec) inferShape(in []tensor.Shape) (tensor.Shape, error) {
	l, err := layoutOf("mixture", in[0])
	if err != nil {
		return nil, err
	}
	if l.C != len(k.st.running) {
		return nil, errors.Errorf(`input "mixture" %v: expected %d channels, got %d`, in[0], len(k.st.running), l.C)
	}
	return in[0].Clone(), nil
}

type covScaleNormKernel[T Float] struct{ covScaleNormSpec }

func (covScaleNormKernel[T]) gradKernel(int) gradComputation[T] {
	return covScaleNormGradKernel[T]{}
}

func (k covScaleNormKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, err := checkedMixture(in[0], "mixture")
	if err != nil {
		return err
	}
	s, err := runningFactors(k.st, dev, in[0].data, l)
	if err != nil {
		return err
	}
	return dev.ScaleMixtures(out.data, in[0].data, l, s)
}

// runningFactors updates the running average (in training) from x and
// returns the per-mixture factors of its channels. The state is replaced only
// once every new value is known to be valid, so a bad batch leaves it
// untouched.
func runningFactors[T Float](st *covScaleState, dev device.Kernels[T], x []T, l mixture.Layout) ([]T, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	running := append([]float64(nil), st.running...)
	if st.training {
		tau := make([]float64, l.Mixtures())
		if err := dev.MeanTraces(tau, x, l); err != nil {
			return nil, err
		}
		alpha := math.Min(float64(l.B)/1000, 0.2)
		for c := range running {
			batch := channelSum(tau, l, c) / float64(l.B)
			if _, ok := device.CovScaleFactor(l.D, batch); !ok {
				return nil, errors.Errorf(`input "mixture": channel %d has batch mean covariance trace %g, expected a positive finite value`, c, batch)
			}
			running[c] = (1-alpha)*running[c] + alpha*batch
		}
	}
	s, err := perChannel[T](l, func(c int) (float64, error) {
		f, ok := device.CovScaleFactor(l.D, running[c])
		if !ok {
			return 0, errors.Errorf("channel %d: running mean trace %g has no scale factor", c, running[c])
		}
		return f, nil
	})
	if err != nil {
		return nil, err
	}
	copy(st.running, running)
	return s, nil
}

// covScaleNormGradKernel computes ∂L/∂mixture of CovScaleNorm from
// (mixture, output, grad) with the factors held constant. It recovers the
// factor the forward applied from its input and output,
// s[c]² = Σ_{b,k} tr Σ_y / Σ_{b,k} tr Σ_x, which is exact up to rounding,
// so the backward shares no state with the forward and is right whether the
// forward ran in training or evaluation mode.
type covScaleNormGradKernel[T Float] struct{ noParams }

func (covScaleNormGradKernel[T]) name() string { return "gm.CovScaleNormGrad" }
func (covScaleNormGradKernel[T]) computations() []string {
	return []string{"MeanTraces", "ScaleMixturesBackward"}
}

func (covScaleNormGradKernel[T]) do(dev device.Kernels[T], out operand[T], in []operand[T]) error {
	l, _ := mixture.LayoutOf(in[0].shape)
	tx, ty := make([]float64, l.Mixtures()), make([]float64, l.Mixtures())
	if err := dev.MeanTraces(tx, in[0].data, l); err != nil {
		return err
	}
	if err := dev.MeanTraces(ty, in[1].data, l); err != nil {
		return err
	}
	s, err := perChannel[T](l, func(c int) (float64, error) {
		sx, sy := channelSum(tx, l, c), channelSum(ty, l, c)
		f := math.Sqrt(sy / sx)
		if !(f > 0) || math.IsInf(f, 0) {
			return 0, errors.Errorf("channel %d: cannot recover the scale factor from traces %g (input) and %g (output)", c, sx, sy)
		}
		return f, nil
	})
	if err != nil {
		return err
	}
	return dev.ScaleMixturesBackward(out.data, in[2].data, l, s)
}

// channelSum returns Σ_b v[b·C+c], the sum over the batch of channel c's
// per-mixture values v.
func channelSum(v []float64, l mixture.Layout, c int) float64 {
	var s float64
	for b := range l.B {
		s += v[b*l.C+c]
	}
	return s
}

// perChannel returns the per-mixture factors s[b·C+c] = f(c), the same for
// every batch entry of a channel, or the first error of f.
func perChannel[T Float](l mixture.Layout, f func(c int) (float64, error)) ([]T, error) {
	s := make([]T, l.Mixtures())
	for c := range l.C {
		v, err := f(c)
		if err != nil {
			return nil, err
		}
		for b := range l.B {
			s[b*l.C+c] = T(v)
		}
	}
	return s, nil
}
