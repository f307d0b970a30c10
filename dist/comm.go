package dist

import (
	"encoding/binary"
	"math"

	"github.com/pkg/errors"
)

// Comm is a communicator: the ranks 0 … Size()−1 of one job and the
// collective operations among them. Every method but Rank, Size and Abort is
// collective: every rank calls it, in the same order, with buffers of the
// same length. A Comm is used from one goroutine at a time.
type Comm interface {
	// Rank is this process's rank, in [0, Size()).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllReduceFloat32 replaces buf on every rank by the element-wise sum of
	// every rank's buf.
	AllReduceFloat32(buf []float32) error
	// AllReduceFloat64 replaces buf on every rank by the element-wise sum of
	// every rank's buf.
	AllReduceFloat64(buf []float64) error
	// Broadcast copies root's buf into every other rank's buf, which must
	// have the same length (BroadcastBytes sends a length first).
	Broadcast(buf []byte, root int) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Abort stops the whole job after a failure on this rank, so that the
	// other ranks do not wait for it for ever. With MPI it calls MPI_Abort,
	// which ends every process of the job with the exit status code and
	// does not return; in a Local group every pending and later collective
	// of the other ranks fails; Single does nothing.
	Abort(code int)
	// Close releases the communicator (MPI_Finalize, collective); nothing may
	// be called after it.
	Close() error
}

// Single is the communicator of a process that trains alone.
type Single struct{}

var _ Comm = Single{}

// Rank returns 0.
func (Single) Rank() int { return 0 }

// Size returns 1.
func (Single) Size() int { return 1 }

// AllReduceFloat32 leaves buf as it is: the sum over one rank.
func (Single) AllReduceFloat32([]float32) error { return nil }

// AllReduceFloat64 leaves buf as it is: the sum over one rank.
func (Single) AllReduceFloat64([]float64) error { return nil }

// Broadcast leaves buf as it is; root must be 0.
func (Single) Broadcast(_ []byte, root int) error { return checkRoot(root, 1) }

// Barrier returns at once.
func (Single) Barrier() error { return nil }

// Abort does nothing: there is no other rank to stop.
func (Single) Abort(int) {}

// Close does nothing.
func (Single) Close() error { return nil }

// BroadcastBytes returns root's data on every rank: root sends its length
// and then its bytes, so the other ranks need not know the length (their
// data is ignored).
func BroadcastBytes(c Comm, data []byte, root int) ([]byte, error) {
	var n [8]byte
	if c.Rank() == root {
		binary.LittleEndian.PutUint64(n[:], uint64(len(data)))
	}
	if err := c.Broadcast(n[:], root); err != nil {
		return nil, errors.Wrap(err, "dist: broadcasting a length")
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > 1<<40 {
		return nil, errors.Errorf("dist: rank %d broadcast a length of %d bytes", root, size)
	}
	buf := data
	if c.Rank() != root {
		buf = make([]byte, size)
	}
	if err := c.Broadcast(buf, root); err != nil {
		return nil, errors.Wrapf(err, "dist: broadcasting %d bytes", size)
	}
	return buf, nil
}

func checkRoot(root, size int) error {
	if root < 0 || root >= size {
		return errors.Errorf("dist: broadcast root %d outside the %d ranks", root, size)
	}
	return nil
}

// BroadcastFloat64 copies root's v into every other rank's v, which must
// have the same length.
func BroadcastFloat64(c Comm, v []float64, root int) error {
	buf := make([]byte, 8*len(v))
	if c.Rank() == root {
		for i, x := range v {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(x))
		}
	}
	if err := c.Broadcast(buf, root); err != nil {
		return err
	}
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*i:]))
	}
	return nil
}
