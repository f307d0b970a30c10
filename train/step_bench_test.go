package train

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkTrainStep measures one training step (forward, backward, Adam and
// the decay step) of a preset's model on generated mixtures, reporting
// samples per second. The paper preset runs with batch 8 to keep one step
// short; the cost per sample is what matters for the epoch projection.
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []struct {
		preset string
		batch  int
	}{{"demo", 50}, {"paper", 8}, {"paper-fused", 8}} {
		b.Run(fmt.Sprintf("%s_B%d", strings.ReplaceAll(c.preset, "-", "_"), c.batch), func(b *testing.B) {
			rc := Presets[c.preset]
			setup, err := Resolve(rc)
			if err != nil {
				b.Fatal(err)
			}
			mc := setup.Model
			mc.Batch = c.batch
			// Two-class generated data fed to the unchanged 10-class model:
			// the cost of a step does not depend on the labels.
			s := SyntheticLines(mc.Batch, mc.Layout.InputGaussians, 1)
			s.Classes = mc.Classes
			tr, err := newTrainer(mc, s, s, Options{Epochs: 1, LR: 1e-3, DecayRate: 0.05, Log: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.close()
			tr.st.EpochPerm = make([]int, mc.Batch)
			for i := range tr.st.EpochPerm {
				tr.st.EpochPerm[i] = i
			}
			for b.Loop() {
				if _, _, _, err := tr.step(0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(mc.Batch*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
