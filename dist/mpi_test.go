//go:build mpi && cgo

package dist

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestMain finalises MPI after the tests, as every MPI process must.
func TestMain(m *testing.M) {
	code := m.Run()
	if c, err := Open(); err == nil {
		if err := c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestMPIWorld runs the collectives on MPI_COMM_WORLD. Under a launcher
// (make mpi-test: mpirun -np 2) GMCN_MPI_RANKS names the job's size, and
// the test fails if MPI reports another; without it the world may be one
// rank.
func TestMPIWorld(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	if want, err := strconv.Atoi(os.Getenv("GMCN_MPI_RANKS")); err == nil && c.Size() != want {
		t.Fatalf("MPI_COMM_WORLD has %d ranks, GMCN_MPI_RANKS says %d", c.Size(), want)
	}
	if err := checkComm(c); err != nil {
		t.Fatal(err)
	}
}

// benchAllReduce times all-reduces of n values on MPI_COMM_WORLD. Every
// rank must run the same number: run with a fixed -test.benchtime=Nx.
func benchAllReduce(b *testing.B, n int) {
	c, err := Open()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]float64, n)
	if err := c.Barrier(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := c.AllReduceFloat64(buf); err != nil {
			b.Fatal(err)
		}
	}
}
