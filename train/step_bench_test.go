package train

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/models"
)

// BenchmarkTrainStep measures one training step (forward, backward, Adam and
// the decay step) of a preset's model on generated mixtures, reporting
// samples per second. The paper preset runs with batch 8 to keep one step
// short; the cost per sample is what matters for the epoch projection. The
// ModelNet10 model runs at the paper's batch 21 on random 3D mixtures: the
// cost of a step depends on the sizes, not on what the mixtures show. The
// test binary's GMCN_TEST_DEVICE chooses the device (TestMain).
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []struct {
		preset string
		batch  int
	}{{"demo", 50}, {"paper", 8}, {"paper-fused", 8}, {"modelnet10-paper", 21}} {
		b.Run(fmt.Sprintf("%s_B%d", strings.ReplaceAll(c.preset, "-", "_"), c.batch), func(b *testing.B) {
			rc := Presets[c.preset]
			setup, err := Resolve(rc)
			if err != nil {
				b.Fatal(err)
			}
			mc := setup.Model
			mc.Batch = c.batch
			s := stepInputs(mc)
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

// stepInputs returns one batch of generated inputs for the model mc: the
// two-class lines in 2D, random mixtures in 3D, with the model's class count
// (the cost of a step does not depend on the labels).
func stepInputs(mc models.Config) *dataset.Inputs {
	s := SyntheticLines(mc.Batch, mc.Layout.InputGaussians, 1)
	if mc.D == 3 {
		l := dataset.FitLayout(mc.Batch, mc.Layout.InputGaussians, 3)
		spec := gmtest.Spec{WeightMin: 0.5, WeightMax: 1.5, Spread: 1, CovScale: 0.05, CovDiag: 0.01}
		s.Layout = l
		s.Mixtures = gmtest.Mixtures[float32](rand.New(rand.NewPCG(1, 3)), spec, l.B, l.C, l.N, l.D)
	}
	s.Classes = mc.Classes
	return s
}
