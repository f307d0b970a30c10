package optim

// Plateau is ReduceLROnPlateau in "max" mode on a metric such as test
// accuracy (docs/algorithms.md, "Optimisation"): when the metric has not improved by more than the
// relative Threshold for Patience epochs, the learning rate is multiplied by
// Factor, after which Cooldown epochs pass before counting again. Its fields
// are its whole state, so a checkpoint restores it exactly.
type Plateau struct {
	Factor, Threshold, MinLR float64
	Patience, Cooldown       int

	Best         float64
	BadEpochs    int
	CooldownLeft int
	Seen         bool
}

// NewPlateau returns the reference's MNIST settings: factor 0.1, relative
// threshold 2e-4, patience 1, cooldown 1.
func NewPlateau() *Plateau {
	return &Plateau{Factor: 0.1, Threshold: 2e-4, Patience: 1, Cooldown: 1, MinLR: 1e-7}
}

// Observe records one epoch's metric and returns the learning rate to use
// next, given the current one.
func (p *Plateau) Observe(metric, lr float64) float64 {
	if !p.Seen || metric > p.Best*(1+p.Threshold) {
		p.Best, p.BadEpochs, p.Seen = metric, 0, true
	} else {
		p.BadEpochs++
	}
	if p.CooldownLeft > 0 {
		p.CooldownLeft--
		p.BadEpochs = 0
	}
	if p.BadEpochs > p.Patience {
		p.BadEpochs, p.CooldownLeft = 0, p.Cooldown
		return max(lr*p.Factor, p.MinLR)
	}
	return lr
}
