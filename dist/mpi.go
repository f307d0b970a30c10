//go:build mpi && cgo

package dist

/*
#cgo pkg-config: mpi
#include <stdlib.h>
#include <mpi.h>

// MPI's handles are macros (Open MPI: addresses of library globals), which
// cgo cannot name; these wrappers do.
static int gmcn_init(int *provided) {
	int done = 0;
	MPI_Initialized(&done);
	if (done) {
		return MPI_Query_thread(provided);
	}
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
}
static int gmcn_serialized(int provided) { return provided >= MPI_THREAD_SERIALIZED; }
static int gmcn_errors_return(void) { return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); }
static int gmcn_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int gmcn_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int gmcn_sum_f32(float *buf, int n) { return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }
static int gmcn_sum_f64(double *buf, int n) { return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }
static int gmcn_bcast(void *buf, int n, int root) { return MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD); }
static int gmcn_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static void gmcn_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
static int gmcn_finalize(void) { return MPI_Finalize(); }
static void gmcn_error_string(int code, char *s) {
	int n = 0;
	if (MPI_Error_string(code, s, &n) != MPI_SUCCESS) {
		n = 0;
	}
	s[n] = 0;
}
static int gmcn_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/pkg/errors"
)

// MPI reports whether this build has the MPI implementation (the mpi tag).
const MPI = true

// world is MPI_COMM_WORLD. MPI is initialised with MPI_THREAD_SERIALIZED and
// every call holds mu, because goroutines move between OS threads.
type world struct {
	mu         sync.Mutex
	rank, size int
	closed     bool
}

var (
	openOnce  sync.Once
	openWorld *world
	openErr   error
)

// Open initialises MPI (once per process) and returns MPI_COMM_WORLD, whose
// errors are returned rather than aborting the job. A process started
// without a launcher is a world of one rank.
func Open() (Comm, error) {
	openOnce.Do(func() { openWorld, openErr = initWorld() })
	if openErr != nil {
		return nil, openErr
	}
	return openWorld, nil
}

func initWorld() (*world, error) {
	// Open MPI installs its own handlers for SIGSEGV, SIGBUS, SIGILL and
	// SIGFPE (to print a backtrace) without SA_ONSTACK, which the Go runtime
	// requires of every handler; Go prints its own traces anyway.
	if _, set := os.LookupEnv("OMPI_MCA_opal_signal"); !set {
		os.Setenv("OMPI_MCA_opal_signal", "")
	}
	var provided C.int
	if err := check("MPI_Init_thread", C.gmcn_init(&provided)); err != nil {
		return nil, err
	}
	if C.gmcn_serialized(provided) == 0 {
		return nil, errors.Errorf("dist: the MPI library provides thread level %d; gmcn needs MPI_THREAD_SERIALIZED", int(provided))
	}
	if err := check("MPI_Comm_set_errhandler", C.gmcn_errors_return()); err != nil {
		return nil, err
	}
	var r, s C.int
	if err := check("MPI_Comm_rank", C.gmcn_rank(&r)); err != nil {
		return nil, err
	}
	if err := check("MPI_Comm_size", C.gmcn_size(&s)); err != nil {
		return nil, err
	}
	return &world{rank: int(r), size: int(s)}, nil
}

func (w *world) Rank() int { return w.rank }
func (w *world) Size() int { return w.size }

// chunk is the most elements one MPI call takes: counts are C ints.
const chunk = math.MaxInt32

func (w *world) AllReduceFloat32(buf []float32) error {
	return w.chunked("MPI_Allreduce", len(buf), func(i, n int) C.int {
		return C.gmcn_sum_f32((*C.float)(unsafe.Pointer(&buf[i])), C.int(n))
	})
}

func (w *world) AllReduceFloat64(buf []float64) error {
	return w.chunked("MPI_Allreduce", len(buf), func(i, n int) C.int {
		return C.gmcn_sum_f64((*C.double)(unsafe.Pointer(&buf[i])), C.int(n))
	})
}

func (w *world) Broadcast(buf []byte, root int) error {
	if err := checkRoot(root, w.size); err != nil {
		return err
	}
	return w.chunked("MPI_Bcast", len(buf), func(i, n int) C.int {
		return C.gmcn_bcast(unsafe.Pointer(&buf[i]), C.int(n), C.int(root))
	})
}

func (w *world) Barrier() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	return check("MPI_Barrier", C.gmcn_barrier())
}

func (w *world) Abort(code int) {
	w.mu.Lock() // never released: MPI_Abort does not return
	C.gmcn_abort(C.int(code))
}

func (w *world) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return check("MPI_Finalize", C.gmcn_finalize())
}

var errClosed = errors.New("dist: the MPI communicator is closed")

// chunked calls op on consecutive pieces of at most chunk elements of a
// buffer of n; Go memory passed to C is not kept beyond the call.
func (w *world) chunked(name string, n int, op func(i, n int) C.int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errClosed
	}
	for i := 0; i < n; i += chunk {
		if err := check(name, op(i, min(chunk, n-i))); err != nil {
			return err
		}
	}
	return nil
}

// check turns an MPI return code into an error with MPI's message.
func check(name string, code C.int) error {
	if code == 0 { // MPI_SUCCESS
		return nil
	}
	s := (*C.char)(C.malloc(C.size_t(C.gmcn_max_error_string() + 1)))
	defer C.free(unsafe.Pointer(s))
	C.gmcn_error_string(code, s)
	return errors.Errorf("dist: %s failed: %s (MPI error %d)", name, C.GoString(s), int(code))
}
