#!/usr/bin/env bash
# gpu-build.sh builds what scripts/gpu-check.sh runs into bin/gpu/: the test
# binaries of cudaops, ops, gmnode and train and bin/gmcn, all with the CUDA
# device and the SIMD kernels, stripped. With --emulated the CUDA device is
# the emulator (tags gmcuda,gmcudaemu: no libcuda, no GPU), so that the
# check runs here and in CI; without it they link the real driver
# (libcuda.so, scripts/install-cuda.sh) for a GPU machine (make gpu-bundle).
# With --base REV [--emulated] it adds only the train test binary of commit
# REV, as bin/gpu/train-base.test (and REV in bin/gpu/base.txt), for
# gpu-check.sh's comparison of training steps; bin/gpu must be built.
#
#   scripts/gpu-build.sh [--emulated]
#   scripts/gpu-build.sh --base REV [--emulated]
set -euo pipefail
cd "$(dirname "$0")/.."

tags=gmcuda
base=
while [ $# -gt 0 ]; do
	case "$1" in
	--emulated) tags=gmcuda,gmcudaemu ;;
	--base)
		base=$(git rev-parse --verify --short "${2:?gpu-build: --base needs a commit}^{commit}")
		shift
		;;
	*)
		echo "gpu-build: unknown argument $1 (want --emulated, --base REV)" >&2
		exit 2
		;;
	esac
	shift
done
# Only silence C warnings inside gorgonia.org/cu itself.
export CGO_CFLAGS="-Wno-deprecated-declarations -Wno-implicit-function-declaration"
export GOEXPERIMENT=simd
out=bin/gpu
if [ -n "$base" ]; then
	if [ ! -d "$out" ]; then
		echo "gpu-build: $out missing: build this commit's binaries first (scripts/gpu-build.sh)" >&2
		exit 2
	fi
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	git archive "$base" | tar -x -C "$src"
	(cd "$src" && go test -c -tags "$tags" -ldflags="-s -w" -o "$OLDPWD/$out/train-base.test" ./train)
	echo "$base" >"$out/base.txt"
	echo "gpu-build: $out/train-base.test built from $base with -tags $tags"
	exit 0
fi
rm -rf "$out"
mkdir -p "$out"
for p in cudaops ops gmnode train; do
	go test -c -tags "$tags" -ldflags="-s -w" -o "$out/$p.test" "./$p"
done
go build -tags "$tags" -ldflags="-s -w" -o "$out/gmcn" ./cmd/gmcn
echo "gpu-build: $out built with -tags $tags"
