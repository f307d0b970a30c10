package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// TestBlockBadInput checks that a block whose intermediates are not finite
// (a NaN in the data) returns the error of the part that found it, without
// a panic, and that the states it recycles still give the right result
// afterwards: a block of valid input, saving and not, equals the block run
// on fresh state.
func TestBlockBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lx := mixture.Layout{B: 2, C: 2, N: 9, D: 2}
	lk := mixture.Layout{B: 3, C: 2, N: 2, D: 2}
	b := device.BlockSpec{Fit: device.ConvFitSelect{N: 12, Negative: 1}, Reduce: device.BlockTreeHEM, Np: 4, TreeHEM: device.TreeHEMOptions{Reduction: 2}}
	x, k := treehemMixture(rng, lx, 0.5), treehemMixture(rng, lk, 0.5)
	want := make([]float64, b.Layout(lx, lk).Len())
	if err := Block(want, x, k, lx, lk, b); err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(x)
	bad[3] = math.NaN()
	y := make([]float64, len(want))
	for _, save := range []bool{false, true} {
		var err error
		if save {
			_, err = BlockSaving(y, bad, k, lx, lk, b)
		} else {
			err = Block(y, bad, k, lx, lk, b)
		}
		if err == nil || !strings.Contains(err.Error(), "block's") {
			t.Errorf("save=%v: NaN in the data gave error %v, want one naming the block's part", save, err)
		}
	}
	st, err := BlockSaving(y, x, k, lx, lk, b)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Release()
	if !slices.Equal(y, want) {
		t.Error("after the failed calls the block's output differs")
	}
}
