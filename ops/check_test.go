package ops

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// TestValidateParallelFirst puts invalid covariances into mixtures of an
// input spanning several of validateParallel's chunks, and into one mixture
// alone (a single goroutine); the error must name the first bad mixture in
// (b, c) order and its component, wherever the chunks fall.
func TestValidateParallelFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	big := mixture.Layout{B: 10, C: 20, N: 64, D: 2}
	per := validateChunk / (big.N * big.Stride()) // mixtures per chunk
	if big.Mixtures() < 5*per+1 {
		t.Fatalf("%d mixtures, want more than 5 chunks of %d", big.Mixtures(), per)
	}
	for _, c := range []struct {
		l        mixture.Layout
		mixtures []int // the bad ones, the first in (b, c) order first
	}{
		{big, []int{3*per + 1, 5 * per}},
		{big, []int{per - 1, per}}, // either side of a chunk's edge
		{big, []int{per, per - 1 + 2*per}},
		{big, []int{2, 3}},
		{mixture.Layout{B: 1, C: 1, N: 4, D: 2}, []int{0}},
	} {
		l := c.l
		x := gmtest.Mixtures[float64](rng, gmtest.StandardSpec(), l.B, l.C, l.N, l.D)
		if err := validateParallel(x, l); err != nil {
			t.Fatalf("valid input %v: %v", l, err)
		}
		const n = 3
		for _, m := range slices.Backward(c.mixtures) {
			cov := mixture.Mixture(x, l, m)[n*l.Stride()+1+l.D:]
			cov[0], cov[1], cov[2], cov[3] = -1, 0, 0, -1
		}
		m := c.mixtures[0]
		want := fmt.Sprintf("component (b=%d, c=%d, n=%d)", m/l.C, m%l.C, n)
		if err := validateParallel(x, l); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v, bad mixtures %v: error %v, want one naming %s", l, c.mixtures, err, want)
		}
	}
}
