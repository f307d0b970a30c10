// Package predict classifies new inputs with a trained run. LoadRun reads a
// run directory (run.json and checkpoint.gmcn, as `gmcn train` writes them),
// builds the run's model for inference and loads its state; Predictor.Predict
// returns class probabilities for packed input mixtures, in batches of the
// run's fixed batch size.
//
// The inputs must be fitted exactly as the run's training data was: the
// FitImages and FitShapes methods apply the run's dataset.FitConfig with the
// same fitting functions (dataset/mnist for images, shapes for meshes and
// point clouds), and LoadImage and LoadIDXImages read image files into the
// form MNIST has: 28×28 grey levels, a white digit on black.
package predict
