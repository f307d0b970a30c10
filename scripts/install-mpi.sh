#!/bin/sh
# install-mpi.sh installs Open MPI from Debian for the MPI build of gmcn
# (make build-mpi, make mpi-test; docs/distributed.md): the mpirun launcher
# (openmpi-bin) and the C headers and library the cgo binding links with
# (libopenmpi-dev, found by pkg-config as "mpi"). Idempotent, like
# install-deps.sh, which does the work. MPICH (mpich, libmpich-dev) works as
# well where it is the system's MPI.
set -eu
exec sh "$(dirname "$0")/install-deps.sh" openmpi-bin libopenmpi-dev pkg-config
