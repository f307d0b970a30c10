#!/usr/bin/env bash
# gpu-bundle.sh packs everything a GPU machine with no Go and no network
# needs to run scripts/gpu-check.sh into bin/gpu-bundle.tar.xz: the tracked
# source tree (the tests read files of their packages), bin/gpu/ from
# scripts/gpu-build.sh and MNIST under data/mnist. With --base REV it also
# builds the train test binary of commit REV (bin/gpu/train-base.test,
# named in bin/gpu/base.txt), against which gpu-check.sh then times this
# build's training steps, alternated. On the GPU machine:
#
#   tar xJf gpu-bundle.tar.xz && cd gpu-bundle && bash scripts/gpu-check.sh
#
# It fails if the archive is over 60 MB.
#
#   scripts/gpu-bundle.sh [--base REV]
set -euo pipefail
cd "$(dirname "$0")/.."

base=
case "${1:-}" in
--base)
	base=$(git rev-parse --verify --short "${2:?gpu-bundle: --base needs a commit}^{commit}")
	;;
"") ;;
*)
	echo "gpu-bundle: unknown argument $1 (want --base REV or nothing)" >&2
	exit 2
	;;
esac

bash scripts/gpu-build.sh
if [ -n "$base" ]; then
	bash scripts/gpu-build.sh --base "$base"
fi
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
