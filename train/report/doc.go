// Package report presents a training run: the per-epoch metrics and their CSV
// file, the confusion matrix as CSV, a PNG chart of the loss and accuracy
// curves, and a progress bar for long loops. Every file is written atomically,
// so an interrupted run never leaves a half-written one.
package report
