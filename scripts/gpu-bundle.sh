#!/usr/bin/env bash
# gpu-bundle.sh packs everything a GPU machine with no Go and no network
# needs to run scripts/gpu-check.sh into bin/gpu-bundle.tar.xz: the tracked
# source tree (the tests read files of their packages), bin/gpu/ from
# scripts/gpu-build.sh and MNIST under data/mnist. On the GPU machine:
#
#   tar xJf gpu-bundle.tar.xz && cd gpu-bundle && bash scripts/gpu-check.sh
#
# It fails if the archive is over 60 MB.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/gpu-build.sh
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/gpu-bundle
mkdir -p "$root"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$root"
cp -r bin/gpu "$root/bin-gpu"
mkdir -p "$root/bin"
mv "$root/bin-gpu" "$root/bin/gpu"
bash scripts/prepare-data.sh "$root/data" >/dev/null
rm -rf "$root/data/fashion-mnist" # MNIST is all the check trains on
tar -C "$stage" -cf - gpu-bundle | xz -T0 -6 >bin/gpu-bundle.tar.xz
size=$(stat -c %s bin/gpu-bundle.tar.xz)
echo "gpu-bundle: bin/gpu-bundle.tar.xz, $((size / 1000000)) MB ($(git rev-parse --short HEAD)$(git diff --quiet || echo ', with uncommitted changes'))"
if [ "$size" -gt 60000000 ]; then
	echo "gpu-bundle: over the 60 MB limit" >&2
	exit 1
fi
