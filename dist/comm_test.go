package dist

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// checkComm runs every collective on the rank c of a job and reports what
// differs from the serial result; every rank of the job must call it.
func checkComm(c Comm) error {
	r, p := c.Rank(), c.Size()
	f64 := []float64{float64(r), 1, 0.5 * float64(r*r)}
	if err := c.AllReduceFloat64(f64); err != nil {
		return err
	}
	want64 := []float64{float64(p*(p-1)) / 2, float64(p), 0}
	for i := range p {
		want64[2] += 0.5 * float64(i*i)
	}
	if fmt.Sprint(f64) != fmt.Sprint(want64) {
		return fmt.Errorf("rank %d: AllReduceFloat64 gave %v, want %v", r, f64, want64)
	}
	f32 := []float32{float32(r + 1), -2}
	if err := c.AllReduceFloat32(f32); err != nil {
		return err
	}
	if want := []float32{float32(p*(p+1)) / 2, float32(-2 * p)}; fmt.Sprint(f32) != fmt.Sprint(want) {
		return fmt.Errorf("rank %d: AllReduceFloat32 gave %v, want %v", r, f32, want)
	}
	if err := c.AllReduceFloat64(nil); err != nil {
		return fmt.Errorf("rank %d: empty AllReduceFloat64: %v", r, err)
	}
	root := p - 1
	b := []byte{byte(r), byte(r), byte(r)}
	if err := c.Broadcast(b, root); err != nil {
		return err
	}
	if want := bytes.Repeat([]byte{byte(root)}, 3); !bytes.Equal(b, want) {
		return fmt.Errorf("rank %d: Broadcast from %d gave %v, want %v", r, root, b, want)
	}
	msg := []byte(strings.Repeat("checkpoint ", 1000))
	mine := msg
	if r != 0 {
		mine = []byte("ignored")
	}
	got, err := BroadcastBytes(c, mine, 0)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("rank %d: BroadcastBytes gave %d bytes, want %d", r, len(got), len(msg))
	}
	if err := c.Broadcast(nil, p); err == nil {
		return fmt.Errorf("rank %d: Broadcast from root %d of %d ranks did not fail", r, p, p)
	}
	return c.Barrier()
}

// runLocal runs f on every rank of a Local group of size p, each in its own
// goroutine, and returns the ranks' errors.
func runLocal(p int, f func(Comm) error) []error {
	cs := NewLocal(p)
	errs := make([]error, p)
	var wg sync.WaitGroup
	for r, c := range cs {
		wg.Go(func() { errs[r] = f(c) })
	}
	wg.Wait()
	return errs
}

func TestSingle(t *testing.T) {
	if err := checkComm(Single{}); err != nil {
		t.Fatal(err)
	}
}

func TestLocal(t *testing.T) {
	for _, p := range []int{1, 2, 3, 5} {
		for r, err := range runLocal(p, checkComm) {
			if err != nil {
				t.Errorf("%d ranks, rank %d: %v", p, r, err)
			}
		}
	}
}

// TestLocalMismatch checks that ranks calling different collectives fail
// with a message naming both, rather than mixing their buffers.
func TestLocalMismatch(t *testing.T) {
	errs := runLocal(2, func(c Comm) error {
		if c.Rank() == 0 {
			return c.AllReduceFloat64(make([]float64, 3))
		}
		return c.AllReduceFloat64(make([]float64, 4))
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "collective mismatch") {
			t.Errorf("rank %d: %v, want a collective mismatch", r, err)
		}
	}
}

// TestLocalAbort checks that a rank that aborts releases the ranks waiting
// for it with an error naming it.
func TestLocalAbort(t *testing.T) {
	errs := runLocal(3, func(c Comm) error {
		if c.Rank() == 1 {
			c.Abort(1)
			return nil
		}
		return c.Barrier()
	})
	for _, r := range []int{0, 2} {
		if err := errs[r]; err == nil || !strings.Contains(err.Error(), "rank 1 aborted") {
			t.Errorf("rank %d: %v, want rank 1's abort", r, err)
		}
	}
}

// BenchmarkAllReduce measures one all-reduce of float64 values of the sizes
// of the demo and paper models' steps (parameters, statistics, sums), on a
// Local group of two ranks; under mpirun (make mpi-bench) on
// MPI_COMM_WORLD.
func BenchmarkAllReduce(b *testing.B) {
	for _, n := range []int{10_432, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("floats_%d", n), func(b *testing.B) { benchAllReduce(b, n) })
	}
}
