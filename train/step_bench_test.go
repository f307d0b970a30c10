package train

import (
	"io"
	"testing"
)

// BenchmarkTrainStepDemo measures one training step (forward, backward, Adam
// and the decay step) of the demo preset's model on generated mixtures.
func BenchmarkTrainStepDemo(b *testing.B) {
	c := Presets["demo"]
	mc, err := c.ModelConfig()
	if err != nil {
		b.Fatal(err)
	}
	mc.Classes = 2
	mc.Layout.Blocks[len(mc.Layout.Blocks)-1].Channels = 2
	s := SyntheticLines(mc.Batch, mc.Layout.InputGaussians, 1)
	tr, err := newTrainer(mc, s, s, Options{Epochs: 1, LR: 1e-3, DecayRate: 0.05, Dir: b.TempDir(), Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.close()
	idx := make([]int, mc.Batch)
	for i := range idx {
		idx[i] = i
	}
	for b.Loop() {
		if _, _, err := tr.step(idx, len(idx)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(mc.Batch*b.N)/b.Elapsed().Seconds(), "samples/s")
}
