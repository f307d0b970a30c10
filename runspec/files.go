package runspec

// File names of a run directory besides ConfigFile: what train's
// DefaultHooks writes there, and what eval, predict, render and export read.
const (
	CheckpointFile = "checkpoint.gmcn"
	MetricsFile    = "metrics.csv"
	PlotFile       = "metrics.png"
	ConfusionFile  = "confusion.csv" // of the latest evaluation
	StepsFile      = "steps.csv"     // one row per training step (report.ReadSteps reads it)
)
