//go:build gmcuda

package train

import (
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/cudaops"
)

// BenchmarkStepTraffic reports what one training step of the paper models
// moves across the bus (cudaops.Device.Traffic): bytes to the device and
// back and kernel launches per step. Every tensor scales with the batch or
// not at all, so the figures are a + b·B, and the batch sizes 1, 2 and 3
// show both terms and that nothing else varies; on the emulated device
// (-tags gmcuda,gmcudaemu) a step of batch 32 would take minutes. It needs
// GMCN_TEST_DEVICE=cuda.
func BenchmarkStepTraffic(b *testing.B) {
	if !strings.HasPrefix(testDev.Name, "cuda") {
		b.Skip("needs GMCN_TEST_DEVICE=cuda")
	}
	gpu, err := cudaops.Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, preset := range []string{"paper", "paper-fused"} {
		for _, batch := range []int{1, 2, 3} {
			b.Run(stepName(preset, batch), func(b *testing.B) {
				tr := newStepTrainer(b, preset, batch)
				defer tr.close()
				t0 := gpu.Traffic()
				for b.Loop() {
					if _, _, _, err := tr.step(0); err != nil {
						b.Fatal(err)
					}
				}
				t := gpu.Traffic().Sub(t0)
				n := float64(b.N)
				b.ReportMetric(float64(t.HostToDevice)/n, "B-to-device/step")
				b.ReportMetric(float64(t.DeviceToHost)/n, "B-to-host/step")
				b.ReportMetric(float64(t.Launches)/n, "launches/step")
			})
		}
	}
}
