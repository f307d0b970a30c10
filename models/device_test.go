package models

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/gmcn-go/gmcn/gmnode"
	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// counting is the CPU's kernels with the convolutions counted, those of
// whole blocks included.
type counting[T device.Float] struct {
	device.Kernels[T]
	n *atomic.Int64
}

func (c counting[T]) Conv(y, x, k []T, lx, lk mixture.Layout) error {
	c.n.Add(1)
	return c.Kernels.Conv(y, x, k, lx, lk)
}

func (c counting[T]) Block(y, x, k []T, lx, lk mixture.Layout, b device.BlockSpec) error {
	c.n.Add(1)
	return c.Kernels.Block(y, x, k, lx, lk, b)
}

// TestTwoModelsTwoDevices builds the same model twice in one process, on
// the CPU and on a device that counts its convolutions, and runs both:
// each computes on its own device (the counter moves only for the second),
// with the same result, and the graphs report their devices.
func TestTwoModelsTwoDevices(t *testing.T) {
	var n atomic.Int64
	cpu := ops.CPU()
	other := &device.Device{Name: "counting", F32: counting[float32]{cpu.F32, &n}, F64: counting[float64]{cpu.F64, &n}}
	l, err := ParseLayout("1/6 -> 3/3 -> 2")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 5))
	input := gmtest.Normal(rng, 4*6*7)
	for i := 0; i < len(input); i += 7 {
		input[i+3], input[i+4], input[i+5], input[i+6] = 1, 0.2, 0.2, 1.5 // valid covariances
	}
	devs := []*device.Device{nil, other}
	var built []*Model
	for _, dev := range devs {
		m, err := Build(Config{Layout: l, D: 2, Classes: 2, Batch: 4, Seed: 9, Dtype: tensor.Float64, Device: dev})
		if err != nil {
			t.Fatal(err)
		}
		if want := cmp.Or(dev, cpu); gmnode.DeviceOf(m.Graph) != want {
			t.Errorf("model built for %s: graph on %s", want.Name, gmnode.DeviceOf(m.Graph).Name)
		}
		built = append(built, m)
	}
	var out [][]float64
	for i, m := range built {
		before := n.Load()
		G.Let(m.Input, tensor.New(tensor.WithShape(4, 1, 6, 7), tensor.WithBacking(slices.Clone(input))))
		G.Let(m.Target, tensor.New(tensor.WithShape(4, 2), tensor.WithBacking([]float64{1, 0, 0, 1, 1, 0, 0, 1})))
		vm := G.NewTapeMachine(m.Graph)
		err := vm.RunAll()
		vm.Close()
		if err != nil {
			t.Fatal(err)
		}
		if calls := n.Load() - before; (devs[i] == nil) != (calls == 0) {
			t.Errorf("model on %s: the counting device ran %d convolutions", cmp.Or(devs[i], cpu).Name, calls)
		}
		out = append(out, slices.Clone(m.LogProbValue().Data().([]float64)))
	}
	if len(out[0]) != 8 || !slices.Equal(out[0], out[1]) {
		t.Errorf("the two devices' log-probabilities differ:\n%v\n%v", out[0], out[1])
	}
}

// TestMEMBlocks checks that a model reducing with MEM builds each block as
// one op (gm.Block), on the CPU and on a device that computes elsewhere
// alike, so that on the GPU its intermediates stay there, and has no
// separate MEM op left.
func TestMEMBlocks(t *testing.T) {
	cpu := ops.CPU()
	elsewhere := &device.Device{Name: "elsewhere", F32: cpu.F32, F64: cpu.F64, External: map[string]bool{"MEM": true, "MEMBackward": true}}
	l, err := ParseLayout("1/16 -> 8/8 -> 16/4 -> 10")
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []*device.Device{cpu, elsewhere} {
		m, err := Build(Config{Layout: l, D: 2, Classes: 10, Batch: 2, Reduction: gmnode.UseMEM(), Device: dev})
		if err != nil {
			t.Fatal(err)
		}
		ops := map[string]int{}
		for _, n := range m.Graph.AllNodes() {
			if n.Op() != nil {
				ops[n.Op().String()]++
			}
		}
		if ops["gm.Block"] != 3 || ops["gm.MEM"] != 0 {
			t.Errorf("device %s: %d block ops and %d MEM ops, want 3 and 0", dev.Name, ops["gm.Block"], ops["gm.MEM"])
		}
	}
}

// TestFusedExactWhere checks where a fused model's exact targets are
// computed: inside its block ops on every device, the CPU and one that
// evaluates mixtures elsewhere (as the GPU does) alike, and by the composed
// ops ConvFit, ConvAt and the ReLU fit to given targets where the blocks
// are built op by op (here block 2, reduced by TreeHEM with T = 8 to 4
// Gaussians, which adds MEM and has no block op; block 1 reduces to 8 in a
// block op, block 3 is not reduced).
func TestFusedExactWhere(t *testing.T) {
	cpu := ops.CPU()
	elsewhere := &device.Device{Name: "elsewhere", F32: cpu.F32, F64: cpu.F64, External: map[string]bool{"Evaluate": true}}
	l, err := ParseLayout("1/16 -> 8/8 -> 16/4 -> 10")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dev               *device.Device
		t8                bool
		evaluates, blocks int // gm.Evaluate nodes: one per block with exact targets when composed
	}{{nil, false, 0, 3}, {cpu, false, 0, 3}, {elsewhere, false, 0, 3}, {elsewhere, true, 1, 2}} {
		cfg := Config{Layout: l, D: 2, Classes: 10, Batch: 2, Fused: 16, FusedExact: true, Device: c.dev}
		if c.t8 {
			cfg.Reduction = gmnode.UseTreeHEM(8)
		}
		m, err := Build(cfg)
		if err != nil {
			t.Fatal(err)
		}
		evaluates, blocks := 0, 0
		for _, n := range m.Graph.AllNodes() {
			if n.Op() == nil {
				continue
			}
			switch n.Op().String() {
			case "gm.Evaluate":
				evaluates++
			case "gm.Block":
				blocks++
			}
		}
		if evaluates != c.evaluates || blocks != c.blocks {
			t.Errorf("device %v, TreeHEM T=8 %v: %d evaluations and %d block ops, want %d and %d", c.dev, c.t8, evaluates, blocks, c.evaluates, c.blocks)
		}
	}
}
