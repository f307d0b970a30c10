// Package train trains the gmcn models. Run builds a model from its
// models.Config, trains it with Adam, the decoupled weight-decay step and a
// plateau learning-rate schedule (package train/optim), and evaluates it on
// the test set after every epoch, recomputing BatchNorm's statistics first.
//
// The loop writes no files itself. It calls hooks (Options.Hooks) when it
// starts, after every step or every N steps, at the end of every epoch with
// the epoch's metrics and confusion matrix, and when the run ends or is
// interrupted; every call after a step or an epoch can take a snapshot of
// the state that resumes the run exactly (package train/checkpoint).
// DefaultHooks writes what the command line writes: the step log (one row
// per step), the checkpoint at epoch ends and on interruption, the metrics
// CSV and plot and the confusion matrix (package train/report);
// CheckpointEvery adds checkpoints inside long epochs. A user adds a hook
// of their own by appending it to Options.Hooks:
//
//	opt.Hooks = append(train.DefaultHooks(dir), train.Hook{
//		Name:  "loss",
//		Every: 100,
//		Step: func(s train.StepInfo) error {
//			fmt.Printf("step %d: loss %.4f\n", s.Step, s.Loss/float64(s.Samples))
//			return nil
//		},
//	})
//
// A run is reproducible: the same configuration, data and seed give the same
// numbers, and a run resumed from a checkpoint continues with exactly the
// numbers of an uninterrupted one, step log included. A finished run resumed
// with more Options.Epochs trains the extra epochs as if it had been
// started with that many: nothing in training depends on the total.
//
// Options.Comm trains one model on several ranks (package dist; MPI under
// mpirun in a build with the mpi tag): every rank computes its shards of each
// step's batch, and the gradients and running statistics are averaged over
// all shards before the one optimiser step every rank takes. P ranks compute
// exactly what one process with Options.Accumulate = P computes
// (docs/distributed.md).
//
// The run's settings (presets, run.json, the data sets and their fitted
// inputs, the names of the files a run folder holds) are package runspec's:
// train needs only a models.Config and the inputs. The device the model
// computes on is models.Config.Device.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package train
