// Package runspec holds what defines a training run apart from the loop
// that trains it: the run's configuration (Config, saved as the run.json of
// its folder, and the named Presets of `gmcn train --preset`), its
// resolution into typed settings (Resolve, Setup: the data set, the input
// fitting and the models.Config), the registry of data sets (MNIST,
// Fashion-MNIST, ModelNet10/40) with their loaders, the fitted and cached
// input mixtures (LoadInputs) and the names of the files in a run folder.
//
// Package train trains a model on the inputs; predict, export and the gmcn
// command read a run folder through this package alone, so using a trained
// model does not import the training loop. Adding a data set means adding
// an entry to the registry here.
//
// Where the model computes is not a setting of the run: the program opens a
// device (ops.OpenDevice) and puts it in Setup.Model.Device.
//
// "The reference" in this package's comments is the authors' implementation,
// cg-tuwien/Gaussian-Mixture-Convolution-Networks at commit c1615d8
// (docs/algorithms.md).
package runspec
