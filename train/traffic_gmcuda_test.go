//go:build gmcuda

package train

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gmcn-go/gmcn/cudaops"
)

// BenchmarkStepTraffic reports what one training step of the paper models
// (the fused one also with exact targets, the standard one also reducing
// with MEM) moves across the bus
// (cudaops.Device.Traffic): bytes to the device and back and kernel
// launches per step, and the host's own work per step, the wall time less
// the time spent in the device's calls (Device.Busy). Every tensor scales
// with the batch or not at all, so the figures are a + b·B, and the batch
// sizes 1, 2 and 3 show both terms and that nothing else varies; on the
// emulated device (-tags gmcuda,gmcudaemu) a step of batch 32 would take
// minutes. It needs GMCN_TEST_DEVICE=cuda.
func BenchmarkStepTraffic(b *testing.B) {
	gpu := stepGPU(b)
	for _, preset := range []string{"paper", "paper-fused", "paper-fused-exact", "paper-mem"} {
		for _, batch := range []int{1, 2, 3} {
			b.Run(stepName(preset, batch), func(b *testing.B) {
				tr := newStepTrainer(b, preset, batch)
				defer tr.close()
				t0, busy0 := gpu.Traffic(), gpu.Busy()
				for b.Loop() {
					if _, _, _, err := tr.step(0); err != nil {
						b.Fatal(err)
					}
				}
				t, busy := gpu.Traffic().Sub(t0), gpu.Busy()-busy0
				n := float64(b.N)
				b.ReportMetric(float64(t.HostToDevice)/n, "B-to-device/step")
				b.ReportMetric(float64(t.DeviceToHost)/n, "B-to-host/step")
				b.ReportMetric(float64(t.Launches)/n, "launches/step")
				b.ReportMetric(float64((b.Elapsed()-busy).Microseconds())/n, "host-µs/step")
			})
		}
	}
}

// BenchmarkStepKernels splits a training step of the paper models (the
// fused one also with exact targets) at batch 32 on the GPU among its kernels: each kernel's CUDA-event time per step
// (µs/step, the largest first in the log), the copies' host-clock time,
// and what remains of the step's wall time: the host's own work (Gorgonia,
// the checks, the fallback's computations, Adam). Timing makes each launch
// wait for an event, so the step is a little slower than BenchmarkTrainStep's.
// It needs GMCN_TEST_DEVICE=cuda.
func BenchmarkStepKernels(b *testing.B) {
	gpu := stepGPU(b)
	for _, preset := range []string{"paper", "paper-fused", "paper-fused-exact"} {
		b.Run(stepName(preset, 32), func(b *testing.B) {
			tr := newStepTrainer(b, preset, 32)
			defer tr.close()
			if _, _, _, err := tr.step(0); err != nil { // warm-up: JIT, buffers
				b.Fatal(err)
			}
			if err := gpu.TimeKernels(true); err != nil {
				b.Fatal(err)
			}
			defer gpu.TimeKernels(false)
			for b.Loop() {
				if _, _, _, err := tr.step(0); err != nil {
					b.Fatal(err)
				}
			}
			n := float64(b.N)
			perStep := func(d time.Duration) float64 { return float64(d.Microseconds()) / n }
			var kernels, copies time.Duration
			var log strings.Builder
			for _, kt := range gpu.KernelTimes() {
				if kt.Copy() {
					copies += kt.Total
				} else {
					kernels += kt.Total
				}
				b.ReportMetric(perStep(kt.Total), kt.Name+"-µs/step")
				fmt.Fprintf(&log, "\n%-40s %9.0f µs/step %6.1f calls/step", kt.Name, perStep(kt.Total), float64(kt.Calls)/n)
			}
			wall := b.Elapsed()
			b.ReportMetric(perStep(kernels), "kernels-µs/step")
			b.ReportMetric(perStep(copies), "copies-µs/step")
			b.ReportMetric(perStep(wall-kernels-copies), "host-µs/step")
			b.Logf("per step: wall %.0f µs, kernels %.0f, copies %.0f, the rest %.0f%s",
				perStep(wall), perStep(kernels), perStep(copies), perStep(wall-kernels-copies), log.String())
		})
	}
}

func init() {
	deviceBusy = func() time.Duration {
		gpu, err := testGPU()
		if gpu == nil || err != nil {
			return -1
		}
		return gpu.Busy()
	}
}

// testGPU returns the GPU the tests run on: nil unless they run on the CUDA
// device.
func testGPU() (*cudaops.Device, error) {
	if !strings.HasPrefix(testDev.Name, "cuda") {
		return nil, nil
	}
	return cudaops.Default()
}

// stepGPU returns the GPU the steps run on, skipping b unless the tests run
// on the CUDA device.
func stepGPU(b *testing.B) *cudaops.Device {
	gpu, err := testGPU()
	if err != nil {
		b.Fatal(err)
	}
	if gpu == nil {
		b.Skip("needs GMCN_TEST_DEVICE=cuda")
	}
	return gpu
}
