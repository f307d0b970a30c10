// Package report presents a training run: the per-epoch metrics and their CSV
// file, the step log (a CSV row per training step), the confusion matrix as
// CSV, the figures drawn with gonum/plot (the loss, accuracy and per-step
// curves, the confusion matrix as a heat map, grids of density images with a
// colour bar) and a progress bar for long loops. Axis ticks are round numbers
// labelled exactly (Ticks). Every file but the step log is written
// atomically, so an interrupted run never leaves a half-written one; the step
// log is appended to row by row, and cut back to the checkpoint's step when a
// run resumes.
package report
