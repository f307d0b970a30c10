#!/usr/bin/env bash
# gpu-build.sh builds what scripts/gpu-check.sh runs into bin/gpu/: the test
# binaries of cudaops, ops, gmnode and train and bin/gmcn, all with the CUDA
# device and the SIMD kernels, stripped. With --emulated the CUDA device is
# the emulator (tags gmcuda,gmcudaemu: no libcuda, no GPU), so that the
# check runs here and in CI; without it they link the real driver
# (libcuda.so, scripts/install-cuda.sh) for a GPU machine (make gpu-bundle).
#
#   scripts/gpu-build.sh [--emulated]
set -euo pipefail
cd "$(dirname "$0")/.."

tags=gmcuda
if [ "${1:-}" = "--emulated" ]; then
	tags=gmcuda,gmcudaemu
elif [ -n "${1:-}" ]; then
	echo "gpu-build: unknown argument $1 (want --emulated or nothing)" >&2
	exit 2
fi
# Only silence C warnings inside gorgonia.org/cu itself.
export CGO_CFLAGS="-Wno-deprecated-declarations -Wno-implicit-function-declaration"
export GOEXPERIMENT=simd
out=bin/gpu
rm -rf "$out"
mkdir -p "$out"
for p in cudaops ops gmnode train; do
	go test -c -tags "$tags" -ldflags="-s -w" -o "$out/$p.test" "./$p"
done
go build -tags "$tags" -ldflags="-s -w" -o "$out/gmcn" ./cmd/gmcn
echo "gpu-build: $out built with -tags $tags"
