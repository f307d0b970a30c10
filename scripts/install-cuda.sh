#!/bin/sh
# install-cuda.sh installs the CUDA toolchain the gmcuda build needs: nvcc
# (to regenerate the PTX in cudaops/ptx) and libcuda.so (to link the driver
# API used by gorgonia.org/cu). Both come from Debian bookworm's non-free
# component, which a fresh machine does not list, so the script enables it.
#
# With --libcuda it installs only libcuda1 (about 30 MB), all that linking
# a gmcuda binary needs (make build-cuda); the toolkit (about 3 GB) is only
# for regenerating the PTX (make ptx, make cuda-check).
#
# It is idempotent: when what it would install is present it changes
# nothing.
#
#   scripts/install-cuda.sh [--libcuda]
set -eu

have_nvcc() { command -v nvcc >/dev/null 2>&1; }
have_libcuda() { ldconfig -p 2>/dev/null | grep -q 'libcuda\.so'; }

packages="nvidia-cuda-toolkit libcuda1"
case "${1:-}" in
--libcuda)
	packages=libcuda1
	if have_libcuda; then
		echo "install-cuda: libcuda present"
		exit 0
	fi
	;;
"")
	if have_nvcc && have_libcuda; then
		echo "install-cuda: nvcc and libcuda present ($(nvcc --version | tail -n 1))"
		exit 0
	fi
	;;
*)
	echo "install-cuda: unknown argument $1 (want --libcuda or nothing)" >&2
	exit 2
	;;
esac

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi

sources=/etc/apt/sources.list.d/debian.sources
if [ -f "$sources" ] && ! grep -q '^Components:.*non-free' "$sources"; then
	echo "install-cuda: enabling contrib, non-free and non-free-firmware in $sources"
	$sudo sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$sources"
fi

echo "install-cuda: installing $packages"
# Another apt client (a parallel install) holds the dpkg lock for a while: wait for it.
lock="-o DPkg::Lock::Timeout=900"
# shellcheck disable=SC2086 # $lock is two words on purpose
$sudo apt-get $lock update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get $lock install -y --no-install-recommends $packages
if [ "$packages" != libcuda1 ]; then
	nvcc --version | tail -n 1
fi
