//go:build mpi && cgo

package train

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/gmcn-go/gmcn/dist"
)

// The MPI build finalises MPI after the tests, as every MPI process must.
func init() {
	afterTests = func() error {
		if c, err := dist.Open(); err == nil {
			return c.Close()
		}
		return nil
	}
}

// TestMPIMatchesAccumulation is the equivalence test of data-parallel
// training over MPI (make mpi-test: mpirun -np 2, GMCN_MPI_RANKS=2): the
// ranks train two epochs, one shard each per step, and rank 0 then trains
// one process that computes the same shards one after the other and
// averages their gradients (Accumulate = P). The parameters must be equal
// bit for bit: a sum over two ranks is a+b on both, and the shards' passes
// are the same computations. The test loss is a sum over test batches that
// the ranks share out, so it may differ in the last bits (tolerance 1e-12,
// relative).
func TestMPIMatchesAccumulation(t *testing.T) {
	c, err := dist.Open()
	if err != nil {
		t.Fatal(err)
	}
	want, err := strconv.Atoi(os.Getenv("GMCN_MPI_RANKS"))
	if err != nil {
		t.Skip("not under make mpi-test (GMCN_MPI_RANKS unset)")
	}
	if c.Size() != want {
		t.Fatalf("MPI_COMM_WORLD has %d ranks, GMCN_MPI_RANKS says %d", c.Size(), want)
	}
	dir := t.TempDir()
	trainSet, testSet := parallelSets()
	opt := testOptions(2, 1e-2, dir)
	opt.Comm = c
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, opt); err != nil {
		t.Fatalf("rank %d: %v", c.Rank(), err)
	}
	if c.Rank() != 0 {
		return
	}
	wantDir := t.TempDir()
	ref := testOptions(2, 1e-2, wantDir)
	ref.Accumulate = c.Size()
	if _, err := Run(context.Background(), tinyConfig(t), trainSet, testSet, ref); err != nil {
		t.Fatal(err)
	}
	sameRun(t, dir, wantDir, 1e-12)
}
