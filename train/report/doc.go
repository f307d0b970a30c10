// Package report presents a training run: the per-epoch metrics and their CSV
// file, the step log (a CSV row per training step), the confusion matrix as
// CSV, a PNG chart of the loss and accuracy curves, and a progress bar for
// long loops. Every file but the step log is written atomically, so an
// interrupted run never leaves a half-written one; the step log is appended
// to row by row, and cut back to the checkpoint's step when a run resumes.
package report
