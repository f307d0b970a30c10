// Package report presents a training run: the per-epoch metrics and their CSV
// file, the confusion matrix as CSV, the figures drawn with gonum/plot (the
// loss, accuracy and per-step curves, the confusion matrix as a heat map,
// grids of density images with a colour bar) and a progress bar for long
// loops. Axis ticks are round numbers labelled exactly (Ticks). Every file is
// written atomically, so an interrupted run never leaves a half-written one.
package report
