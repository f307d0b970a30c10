package train

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/gmcn-go/gmcn/dist"
	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/train/checkpoint"
	"github.com/gmcn-go/gmcn/train/optim"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
	G "gorgonia.org/gorgonia"

	"github.com/gmcn-go/gmcn/dataset"
)

// Options are the training settings.
type Options struct {
	// Epochs is the number of epochs of the run, resumed ones included. A
	// run resumed from the checkpoint of its last epoch with more Epochs
	// trains the extra ones exactly as a run with that many Epochs from the
	// start does: nothing in training (schedule, shuffling, decay) depends on
	// the total; only the progress bar's label and checkpoint.State's
	// Completed do.
	Epochs    int
	LR        float64 // Adam's initial learning rate
	DecayRate float64 // the decoupled weight-decay step uses lr = DecayRate·LR (initial LR)
	Seed      uint64  // shuffling seed (the model has its own in models.Config)
	// Resume, if not empty, is the checkpoint file to continue from; the
	// checkpoint must have been written for the same model and settings.
	Resume string
	// Hooks are called in this order at the points Hook documents; nothing
	// is written to disk but by hooks (DefaultHooks writes the checkpoint,
	// the metrics, their plot and the confusion matrix).
	Hooks []Hook
	Log   io.Writer // the model table, progress bars and epoch summaries; nil discards them
	// StopAfter, if > 0, stops the run after that many training steps as
	// if interrupted; it exists to test resuming.
	StopAfter int

	// Comm is the communicator of a data-parallel run (package dist): every
	// rank runs Run with the same configuration, data and options, trains
	// on its own shards of every step's batch and takes the same optimiser
	// step with the gradients averaged over all shards. Only rank 0 writes
	// the log and calls Hooks. Nil trains alone, as dist.Single.
	Comm dist.Comm
	// Accumulate is the number of model batches (shards) each rank computes
	// per step; 0 means 1. A step trains on Comm.Size()·Accumulate shards of
	// models.Config.Batch samples, and one process with Accumulate = P takes
	// the steps of P ranks with Accumulate = 1 (docs/distributed.md).
	Accumulate int
}

// ErrInterrupted is returned when a run stops early (Ctrl-C or StopAfter);
// the End hooks have been called with Interrupted set, so DefaultHooks'
// checkpoint resumes the run.
var ErrInterrupted = errors.New("training interrupted; resume with --resume")

// Run trains a model of cfg on trainSet, evaluating on testSet after every
// epoch, and returns the metrics of all epochs. The graph has a fixed batch
// size: the last partial batch of an epoch is filled up with the epoch's
// first samples, so every sample is used every epoch (the filler samples
// are not counted in the epoch's statistics).
func Run(ctx context.Context, cfg models.Config, trainSet, testSet *dataset.Inputs, opt Options) ([]report.EpochMetrics, error) {
	if err := checkSet("training", trainSet); err != nil {
		return nil, err
	}
	if err := checkSet("test", testSet); err != nil {
		return nil, err
	}
	if trainSet.Classes != cfg.Classes || testSet.Classes != cfg.Classes {
		return nil, errors.Errorf("train: the model has %d classes but the training set has %d and the test set %d", cfg.Classes, trainSet.Classes, testSet.Classes)
	}
	if err := checkHooks(opt.Hooks); err != nil {
		return nil, err
	}
	if opt.Epochs < 1 || !(opt.LR > 0) || !(opt.DecayRate >= 0) || math.IsInf(opt.LR, 0) || math.IsInf(opt.DecayRate, 0) {
		return nil, errors.Errorf("train: Options has %d epochs, learning rate %v and decay rate %v; want ≥ 1 epoch, a finite rate > 0 and a finite decay rate ≥ 0",
			opt.Epochs, opt.LR, opt.DecayRate)
	}
	if opt.Accumulate < 0 {
		return nil, errors.Errorf("train: Options.Accumulate is %d, want ≥ 1 (or 0 for 1)", opt.Accumulate)
	}
	t, err := newTrainer(cfg, trainSet, testSet, opt)
	if err != nil {
		return nil, err
	}
	defer t.close()
	return t.run(ctx)
}

type trainer struct {
	cfg        models.Config
	opt        Options
	train, tst *dataset.Inputs
	m, eval    *models.Model
	vm, evm    G.VM
	learn      G.Nodes
	st         *checkpoint.State
	pcg        *rand.PCG
	comm       dist.Comm
	shards     int           // model batches per step, over all ranks
	acc        []float64     // a step's sums over this rank's shards (parallel.go)
	reduceTime time.Duration // in the steps' all-reduce this epoch, waiting for other ranks included
	// running is the result channel of a step abandoned by an interrupt,
	// still running in the background (stepOrStop).
	running chan stepResult
	// legacyKey is the configuration key the checkpoints of a fused run
	// had before the key held the fused settings ("" for an unfused run,
	// whose key did not change): such a checkpoint still resumes.
	legacyKey string
}

// testHookStep, when set by a test, runs at the start of every step taken
// in its own goroutine.
var testHookStep func()

// stepResult is what a step in its own goroutine gives back.
type stepResult struct {
	loss          float64
	correct, real int
	err           error
}

func newTrainer(cfg models.Config, trainSet, testSet *dataset.Inputs, opt Options) (*trainer, error) {
	opt.Accumulate = max(opt.Accumulate, 1)
	if opt.Comm == nil {
		opt.Comm = dist.Single{}
	}
	if opt.Log == nil || opt.Comm.Rank() != 0 {
		opt.Log = io.Discard
	}
	if opt.Comm.Rank() != 0 {
		opt.Hooks = nil
	}
	m, err := models.Build(cfg)
	if err != nil {
		return nil, err
	}
	ev, err := models.Build(cfg)
	if err != nil {
		return nil, err
	}
	t := &trainer{cfg: m.Config, opt: opt, train: trainSet, tst: testSet, m: m, eval: ev, learn: m.Learnables(),
		comm: opt.Comm, shards: opt.Comm.Size() * opt.Accumulate}
	step, _, err := gmnode.Grad(m.Loss, t.learn...)
	if err != nil {
		return nil, errors.Wrap(err, "building the gradient graph")
	}
	t.vm = G.NewTapeMachine(step, G.BindDualValues(t.learn...))
	t.evm = G.NewTapeMachine(ev.Graph)
	if err := ev.SetTraining(false); err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s|D%d|B%d|Nk%d|%s|dense%d|seed%d|lr%g|decay%g|train%d|test%d|shuffle%d",
		t.cfg.Layout, t.cfg.D, t.cfg.Batch, t.cfg.KernelGaussians, t.cfg.Reduction, t.cfg.DenseHead, t.cfg.Seed,
		opt.LR, opt.DecayRate, trainSet.Len(), testSet.Len(), opt.Seed)
	if t.shards > 1 {
		// A step's batch is part of the configuration; one shard keeps the
		// keys of the checkpoints written before shards existed.
		key += fmt.Sprintf("|shards%d", t.shards)
	}
	if t.cfg.Bias != models.BiasNone {
		// Likewise, a model without biases keeps the keys of before.
		key += "|bias " + t.cfg.Bias.String()
	}
	if t.cfg.ReLUFit != (ops.ReLUFitOptions{}) {
		// Likewise, the reference's fit keeps the keys written before the
		// fit had options.
		key += fmt.Sprintf("|relufit%+v", t.cfg.ReLUFit)
	}
	if fk := t.cfg.FusedKey(); fk != "" {
		t.legacyKey, key = key, key+"|"+fk
	}
	t.pcg = rand.NewPCG(opt.Seed, 0xda3e39cb94b95bdb)
	if t.comm.Size() > 1 {
		if err := t.startFromRoot(key); err != nil {
			return nil, err
		}
	} else if opt.Resume != "" {
		st, err := checkpoint.Load(opt.Resume)
		if err != nil {
			return nil, err
		}
		if err := t.resume(st, opt.Resume, key); err != nil {
			return nil, err
		}
	} else {
		t.st = t.fresh(key)
	}
	if opt.Resume != "" {
		t.logResume()
	}
	fmt.Fprint(opt.Log, m.Table())
	return t, nil
}

// fresh returns the loop's state at the start of a new run.
func (t *trainer) fresh(key string) *checkpoint.State {
	return &checkpoint.State{ConfigKey: key, Adam: *optim.NewAdam(t.opt.LR), Plateau: *optim.NewPlateau(), LR: t.opt.LR, Epoch: 0, Batch: -1}
}

// resume continues from the checkpoint state st, read from path and to be
// written for the configuration key: it sets the model, the shuffling RNG
// and the loop's state.
func (t *trainer) resume(st *checkpoint.State, path, key string) error {
	if err := t.checkKey(st, path, key); err != nil {
		return err
	}
	if need := st.Epoch + min(st.Batch+1, 1); need > t.opt.Epochs {
		return errors.Errorf("checkpoint %s has trained into epoch %d but the run is to stop after epoch %d: resume with at least %d epochs (--epochs)", path, need, t.opt.Epochs, need)
	}
	if err := t.m.SetState(models.State{Names: st.Names, Params: st.Params, BNMean: st.BNMean, BNVar: st.BNVar, CovNorms: st.CovNorms}); err != nil {
		return errors.Wrapf(err, "checkpoint %s", path)
	}
	if err := t.pcg.UnmarshalBinary(st.RNG); err != nil {
		return errors.Wrapf(err, "checkpoint %s: RNG state", path)
	}
	t.st = st
	return nil
}

// checkKey refuses the checkpoint st, read from path, unless it was written
// for the configuration key, or for the same fused run before the key held
// the fused settings (the key st then continues under is key).
func (t *trainer) checkKey(st *checkpoint.State, path, key string) error {
	if t.legacyKey != "" && st.ConfigKey == t.legacyKey {
		st.ConfigKey = key
	}
	if st.ConfigKey != key {
		return errors.Errorf("checkpoint %s was written for another configuration:\n  checkpoint: %s\n  this run:   %s\n(gmcn train --out %s --overwrite starts afresh; a resumed run needs the ranks × --accumulate it started with)", path, st.ConfigKey, key, filepath.Dir(path))
	}
	return nil
}

// logResume says where a resumed run continues.
func (t *trainer) logResume() {
	st := t.st
	if st.Batch < 0 {
		fmt.Fprintf(t.opt.Log, "resuming from %s: %d epochs done, %d steps\n", t.opt.Resume, st.Epoch, st.Adam.Steps)
	} else {
		fmt.Fprintf(t.opt.Log, "resuming from %s: epoch %d, batch %d, %d steps\n", t.opt.Resume, st.Epoch+1, st.Batch, st.Adam.Steps)
	}
}

func (t *trainer) close() {
	t.evm.Close()
	if t.running == nil {
		t.vm.Close()
		return
	}
	go func() {
		<-t.running
		t.vm.Close()
	}()
}

func (t *trainer) run(ctx context.Context) ([]report.EpochMetrics, error) {
	B := t.cfg.Batch
	n := t.train.Len()
	nb := (n + t.shards*B - 1) / (t.shards * B)
	ran := 0
	longStep := true // until the first step shows otherwise
	if err := t.start(); err != nil {
		return nil, err
	}
	for ; t.st.Epoch < t.opt.Epochs; t.st.Epoch++ {
		if t.st.Batch < 0 {
			t.st.EpochPerm = rand.New(t.pcg).Perm(n)
			rng, _ := t.pcg.MarshalBinary()
			// A finished run extended to more epochs is no longer complete.
			t.st.RNG, t.st.Batch, t.st.Partial, t.st.Completed = rng, 0, checkpoint.EpochSums{}, false
		}
		if err := t.m.SetTraining(true); err != nil {
			return nil, err
		}
		bar := report.NewProgress(t.opt.Log, fmt.Sprintf("epoch %d/%d", t.st.Epoch+1, t.opt.Epochs), n)
		bar.Skip(min(t.st.Batch*t.shards*B, n))
		firstBatch := t.st.Batch
		for ; t.st.Batch < nb; t.st.Batch++ {
			stop, err := t.anyRank(ctx.Err() != nil || (t.opt.StopAfter > 0 && ran == t.opt.StopAfter))
			if err != nil {
				return nil, err
			}
			if stop {
				bar.Finish()
				if err := t.end(true); err != nil {
					return nil, err
				}
				return t.st.Metrics, ErrInterrupted
			}
			start := time.Now()
			loss, correct, real, abandoned, err := t.stepOrStop(ctx, longStep)
			if abandoned != nil {
				bar.Finish()
				if err := t.endAt(true, abandoned); err != nil {
					return nil, err
				}
				return t.st.Metrics, ErrInterrupted
			}
			if err != nil {
				return nil, errors.Wrapf(err, "epoch %d batch %d", t.st.Epoch+1, t.st.Batch)
			}
			longStep = time.Since(start) > time.Second
			p := &t.st.Partial
			p.Loss += loss
			p.Correct += correct
			p.Count += real
			p.Seconds += time.Since(start).Seconds()
			ran++
			bar.Set("loss", fmt.Sprintf("%.4f", p.Loss/float64(p.Count)))
			bar.Set("acc", fmt.Sprintf("%.2f%%", 100*float64(p.Correct)/float64(p.Count)))
			bar.Add(real)
			if err := t.afterStep(loss, correct, real); err != nil {
				return nil, err
			}
		}
		bar.Finish()
		if err := t.recalibrateBN(); err != nil {
			return nil, errors.Wrapf(err, "epoch %d: BatchNorm statistics", t.st.Epoch+1)
		}
		testLoss, testAcc, confusion, err := evaluate(t.m, t.eval, t.evm, t.tst, t.opt.Log, t.comm)
		if err != nil {
			return nil, errors.Wrapf(err, "epoch %d evaluation", t.st.Epoch+1)
		}
		p := t.st.Partial
		row := report.EpochMetrics{Epoch: t.st.Epoch + 1, TrainLoss: p.Loss / float64(p.Count), TrainAcc: float64(p.Correct) / float64(p.Count),
			TestLoss: testLoss, TestAcc: testAcc, LR: t.st.LR, SamplesPerSec: float64(p.Count) / p.Seconds, Seconds: p.Seconds}
		t.st.Metrics = append(t.st.Metrics, row)
		fmt.Fprintln(t.opt.Log, row)
		if t.comm.Size() > 1 {
			steps := nb - firstBatch
			fmt.Fprintf(t.opt.Log, "rank 0 spent %.1f ms per step in the all-reduce of %d values, waiting for the other ranks included\n",
				t.reduceTime.Seconds()*1e3/float64(max(steps, 1)), len(t.acc))
		}
		t.reduceTime = 0
		t.st.LR = t.st.Plateau.Observe(testAcc, t.st.LR)
		if err := t.syncModel(); err != nil {
			return nil, errors.Wrapf(err, "epoch %d", t.st.Epoch+1)
		}
		t.st.Batch = -1
		t.st.Completed = t.st.Epoch+1 == t.opt.Epochs
		if err := t.afterEpoch(confusion); err != nil {
			return nil, err
		}
	}
	if err := t.end(false); err != nil {
		return nil, err
	}
	return t.st.Metrics, nil
}

// stepOrStop takes the step at the loop's position. A step that may be
// long (long, or the first) in a run of one process is taken in its own
// goroutine, from a snapshot of the state before it: when ctx is cancelled
// first, the step is abandoned and stepOrStop returns at once with the
// snapshot, from which the run resumes exactly at this step. The abandoned
// step finishes in the background and the trainer's close leaves its
// machine to it. Short steps, and the steps of data-parallel ranks (which
// must stop together), run to their end: the loop checks ctx between steps.
func (t *trainer) stepOrStop(ctx context.Context, long bool) (loss float64, correct, real int, abandoned func() *checkpoint.State, err error) {
	if !long || ctx.Done() == nil || t.comm.Size() > 1 {
		loss, correct, real, err = t.step(t.st.Batch)
		return loss, correct, real, nil, err
	}
	snap, err := checkpoint.Encode(t.stateAt(t.st.Epoch, t.st.Batch)())
	if err != nil {
		return 0, 0, 0, nil, err
	}
	done := make(chan stepResult, 1)
	go func() {
		if testHookStep != nil {
			testHookStep()
		}
		var r stepResult
		r.loss, r.correct, r.real, r.err = t.step(t.st.Batch)
		done <- r
	}()
	select {
	case r := <-done:
		return r.loss, r.correct, r.real, nil, r.err
	case <-ctx.Done():
		t.running = done
		return 0, 0, 0, func() *checkpoint.State {
			st, err := checkpoint.Decode(snap)
			if err != nil {
				panic(err) // unreachable: the bytes were encoded above
			}
			return st
		}, nil
	}
}

// step takes training step g of the epoch: the forward and backward
// passes of this rank's shards, the sums over all ranks, and the optimiser
// and weight-decay steps with the averaged gradient. It returns the summed
// loss, the correct predictions and the number of real samples of the
// step's batch over all ranks.
func (t *trainer) step(g int) (loss float64, correct, real int, err error) {
	s, err := t.shardSums(g)
	if err != nil {
		return 0, 0, 0, err
	}
	loss = s.loss
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return 0, 0, 0, errors.Errorf("loss is %v", loss)
	}
	t.st.Adam.LR = t.st.LR
	if err := t.st.Adam.Step(G.NodesToValueGrads(t.learn)); err != nil {
		return 0, 0, 0, err
	}
	if err := t.decay(); err != nil {
		return 0, 0, 0, err
	}
	return loss, s.correct, s.real, nil
}

// forwardBackward runs the training graph on the samples idx and returns the
// summed loss and the number of correct predictions over the first real.
func (t *trainer) forwardBackward(idx []int, real int) (float64, int, error) {
	if err := t.m.SetBatch(t.train, idx); err != nil {
		return 0, 0, err
	}
	t.vm.Reset()
	if err := t.vm.RunAll(); err != nil {
		return 0, 0, err
	}
	return t.m.BatchStats(t.train, idx, real, nil)
}

// decay takes the reference's weight-decay step on every kernel with
// lr = DecayRate·LR₀, on the model's device.
func (t *trainer) decay() error {
	lr := t.opt.DecayRate * t.opt.LR
	dev := gmnode.DeviceOf(t.m.Graph)
	for _, k := range t.m.Kernels {
		var err error
		switch w := k.Learnables()[0].Value().Data().(type) {
		case []float32:
			a := k.Learnables()[2].Value().Data().([]float32)
			err = optim.WeightDecay(dev.F32, w, a, t.cfg.D, float32(lr))
		case []float64:
			a := k.Learnables()[2].Value().Data().([]float64)
			err = optim.WeightDecay(dev.F64, w, a, t.cfg.D, lr)
		}
		if err != nil {
			return errors.Wrap(err, "weight decay")
		}
	}
	return nil
}

// checkSet reports an empty or inconsistent set (dataset.Inputs.Check),
// named name.
func checkSet(name string, s *dataset.Inputs) error {
	if s == nil || s.Len() < 1 {
		return errors.Errorf("%s set is empty", name)
	}
	return errors.Wrapf(s.Check(), "%s set", name)
}
