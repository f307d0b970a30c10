#!/bin/sh
# ptx.sh compiles every cudaops/*.cu to PTX in cudaops/ptx/, which the gmcuda
# build embeds (cudaops/ptx.go), so building needs no nvcc. The target is a
# virtual architecture (compute_70) so that newer drivers JIT-compile the PTX
# for their GPU. The output is deterministic for a given nvcc, which is what
# the CI check (regenerate, then git diff) relies on.
#
#   scripts/ptx.sh          regenerate cudaops/ptx/*.ptx
#   scripts/ptx.sh -check   regenerate into a temporary directory and fail if
#                           it differs from the committed files
set -eu
cd "$(dirname "$0")/.."

NVCC=${NVCC:-nvcc}
ARCH=${PTX_ARCH:-compute_70}
out=cudaops/ptx
if [ "${1:-}" = "-check" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
for f in cudaops/*.cu; do
	name=$(basename "$f" .cu)
	# -lineinfo is left out: it would embed absolute paths, and the PTX must
	# not depend on where the repository is checked out.
	"$NVCC" -ptx -arch="$ARCH" -std=c++14 -O3 -Icudaops -o "$out/$name.ptx" "$f"
done
if [ "${1:-}" = "-check" ]; then
	if ! diff -r -q cudaops/ptx "$out" >/dev/null; then
		diff -r cudaops/ptx "$out" | head -40
		echo "ptx.sh: cudaops/ptx is out of date; run scripts/ptx.sh (make ptx) and commit" >&2
		exit 1
	fi
	echo "ptx.sh: committed PTX is up to date"
fi
