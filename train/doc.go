// Package train trains the gmcn models: the training loop (Run), its
// checkpoints, schedules, metrics and progress bar, and the run
// configuration (RunConfig, the run.json of a run) with its resolution into
// typed settings (Resolve, Setup).
//
// The training data comes from package dataset and its data sets
// (dataset/mnist for MNIST and Fashion-MNIST, shapes for ModelNet):
// LoadInputs opens the data set a Setup names and returns its fitted,
// cached input mixtures as Samples.
package train
