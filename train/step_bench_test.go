package train

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gmcn-go/gmcn/dataset"
	"github.com/gmcn-go/gmcn/models"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/shapes"
)

// BenchmarkTrainStep measures one training step (forward, backward, Adam and
// the decay step) of a preset's model on generated mixtures, reporting
// samples per second and, on the CUDA device, the host's own work per step
// (the step's time less the time spent in the device's calls). The paper presets run with batch 8 to keep one step
// short on the CPU, where the cost per sample is what matters for the epoch
// projection, and with batch 32, where a GPU's cost per sample falls; the
// fused model also with near-group targets of radius 0 (--fused-targets
// near, also at batch 32), with the exact targets (--fused-targets exact,
// also at batch 32),
// without the floor on its counts (--fused-min 1), with floors of 128
// and 160 (--fused-min 128, 160) and with exact targets at F = 8 with and
// without the floor; the paper model also reducing with MEM (--reduction
// mem). The
// ModelNet10 model runs at the paper's batch 21 on generated shapes. The
// test binary's GMCN_TEST_DEVICE chooses the device (TestMain).
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range []struct {
		preset string
		batch  int
	}{{"demo", 50}, {"paper", 8}, {"paper", 32}, {"paper-fused", 8}, {"paper-fused", 32}, {"paper-fused-near", 8}, {"paper-fused-near", 32}, {"paper-fused-exact", 8}, {"paper-fused-exact", 32}, {"paper-fused-nofloor", 8}, {"paper-fused-min128", 8}, {"paper-fused-min160", 8}, {"paper-fused-x8-exact", 8}, {"paper-fused-x8-exact-nofloor", 8}, {"paper-mem", 8}, {"modelnet10-paper", 21}} {
		b.Run(stepName(c.preset, c.batch), func(b *testing.B) {
			tr := newStepTrainer(b, c.preset, c.batch)
			defer tr.close()
			busy := deviceBusy()
			for b.Loop() {
				if _, _, _, err := tr.step(0); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.batch*b.N)/b.Elapsed().Seconds(), "samples/s")
			if busy >= 0 {
				b.ReportMetric(float64((b.Elapsed()-(deviceBusy()-busy)).Microseconds())/float64(b.N), "host-µs/step")
			}
		})
	}
}

// deviceBusy returns the time the tests' GPU has spent in calls
// (cudaops.Device.Busy), from which BenchmarkTrainStep reports the host's
// own work per step; −1 where the tests do not run on a GPU.
var deviceBusy = func() time.Duration { return -1 }

// stepName names a benchmark of the preset's step at the batch size.
func stepName(preset string, batch int) string {
	return fmt.Sprintf("%s_B%d", strings.ReplaceAll(preset, "-", "_"), batch)
}

// newStepTrainer returns a trainer of the preset's model at the batch size
// on testDev, whose step(0) trains on one batch of generated inputs.
// Suffixes of the preset name modify its fused blocks: "-exact" and "-near"
// (radius 0) set their targets, "-nofloor" and "-minN" their least count
// (1 or N), "-xN" their factor F; "-mem" makes every block reduce with MEM.
func newStepTrainer(b *testing.B, preset string, batch int) *trainer {
	name, mods := preset, []func(*runspec.Config){}
	for {
		i := strings.LastIndex(name, "-")
		mod, ok := stepModifier(name[i+1:])
		if i < 0 || !ok {
			break
		}
		name, mods = name[:i], append(mods, mod)
	}
	rc, ok := runspec.Presets[name]
	if !ok {
		b.Fatalf("step preset %q: no preset %q", preset, name)
	}
	for _, mod := range mods {
		mod(&rc)
	}
	setup, err := runspec.Resolve(rc)
	if err != nil {
		b.Fatal(err)
	}
	mc := setup.Model
	mc.Batch, mc.Device = batch, testDev
	s := stepInputs(b, rc, mc)
	tr, err := newTrainer(mc, s, s, Options{Epochs: 1, LR: 1e-3, DecayRate: 0.05, Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	tr.st.EpochPerm = make([]int, mc.Batch)
	for i := range tr.st.EpochPerm {
		tr.st.EpochPerm[i] = i
	}
	return tr
}

// stepModifier returns what the suffix tok of a step preset's name sets
// (newStepTrainer), and whether tok is one.
func stepModifier(tok string) (func(*runspec.Config), bool) {
	switch tok {
	case "exact", "near":
		return func(c *runspec.Config) { c.FusedTargets = tok }, true
	case "nofloor":
		return func(c *runspec.Config) { c.FusedMin = 1 }, true
	case "mem":
		return func(c *runspec.Config) { c.Reduction = "mem" }, true
	}
	for p, field := range map[string]func(*runspec.Config) *int{
		"min": func(c *runspec.Config) *int { return &c.FusedMin },
		"x":   func(c *runspec.Config) *int { return &c.Fused },
	} {
		if rest, ok := strings.CutPrefix(tok, p); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 {
				return func(c *runspec.Config) { *field(c) = n }, true
			}
		}
	}
	return nil, false
}

// stepInputs returns one batch of generated inputs for the preset's model:
// the two-class lines in 2D (the cost of a step does not depend on the
// labels), and in 3D the generated ModelNet10-layout shapes
// (shapes.GenerateModelNet, three per class) fitted as the preset fits its
// data; the model's class count either way.
func stepInputs(b *testing.B, rc runspec.Config, mc models.Config) *dataset.Inputs {
	if mc.D != 3 {
		s := SyntheticLines(mc.Batch, mc.Layout.InputGaussians, 1)
		s.Classes = mc.Classes
		return s
	}
	root := filepath.Join(b.TempDir(), "ModelNet10")
	if err := shapes.GenerateModelNet(root, 3, 1, 1); err != nil {
		b.Fatal(err)
	}
	rc.DataDir, rc.CacheDir = root, b.TempDir()
	setup, err := runspec.Resolve(rc)
	if err != nil {
		b.Fatal(err)
	}
	in, _, err := runspec.LoadInputs(setup, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	if in.Len() < mc.Batch {
		b.Fatalf("%d generated shapes, want at least %d", in.Len(), mc.Batch)
	}
	return in
}
