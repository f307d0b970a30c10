// Package dist is how gmcn trains one model in several processes: a small
// communicator interface (Comm) that the training loop uses for
// data-parallel training, with three implementations.
//
//   - Single is the one process of an ordinary run: every collective
//     operation returns its input.
//   - NewLocal makes a group of ranks inside one process, one per goroutine;
//     tests use it to check distributed training without MPI.
//   - Open, in a build with the mpi tag (cgo, an MPI library found by
//     pkg-config as "mpi": Debian's libopenmpi-dev or libmpich-dev), joins
//     MPI_COMM_WORLD, so `mpirun -np P gmcn train …` and `srun gmcn train …`
//     train one model on P ranks. In the default build Open returns Single,
//     and fails with a message naming the launcher when the process was
//     started as one of several MPI ranks, because P independent runs
//     writing one output folder are never what was meant.
//
// Every rank must call the same collective operations in the same order with
// buffers of the same length, as in MPI. The sums are element-wise and their
// result is the same on every rank: in a Local group by construction, with
// MPI because Open MPI's and MPICH's reduction algorithms combine the
// operands in an order that does not depend on the calling rank (for two
// ranks a+b = b+a exactly). The order of a sum over more than two ranks is
// the library's, so results may differ from a serial sum in the last bits.
//
// docs/distributed.md describes how training uses the interface and how a
// GPU build would put NCCL behind it.
package dist
