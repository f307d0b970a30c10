//go:build !(mpi && cgo)

package dist

import (
	"os"
	"strconv"

	"github.com/pkg/errors"
)

// MPI reports whether this build has the MPI implementation (the mpi tag).
const MPI = false

// Open returns the communicator of this process. This build has no MPI, so
// it is Single, unless the process was started as one of several ranks by
// an MPI launcher (mpirun, mpiexec, srun), which Open reports as an error.
func Open() (Comm, error) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"} {
		if n, err := strconv.Atoi(os.Getenv(v)); err == nil && n > 1 {
			return nil, errors.Errorf("dist: this process is one of %d MPI ranks (%s=%d) but was built without MPI; build with `make build-mpi` (the mpi tag) or run a single process", n, v, n)
		}
	}
	return Single{}, nil
}
