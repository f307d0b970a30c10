#!/bin/sh
# install-cuda.sh installs the CUDA toolchain the gmcuda build needs: nvcc
# (to regenerate the PTX in cudaops/ptx) and libcuda.so (to link the driver
# API used by gorgonia.org/cu). Both come from Debian bookworm's non-free
# component, which a fresh machine does not list, so the script enables it.
#
# It is idempotent: when nvcc and libcuda.so are already present it changes
# nothing. The download is about 3 GB and takes a few minutes.
set -eu

have_nvcc() { command -v nvcc >/dev/null 2>&1; }
have_libcuda() { ldconfig -p 2>/dev/null | grep -q 'libcuda\.so'; }

if have_nvcc && have_libcuda; then
	echo "install-cuda: nvcc and libcuda present ($(nvcc --version | tail -n 1))"
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi

sources=/etc/apt/sources.list.d/debian.sources
if [ -f "$sources" ] && ! grep -q '^Components:.*non-free' "$sources"; then
	echo "install-cuda: enabling contrib, non-free and non-free-firmware in $sources"
	$sudo sed -i 's/^Components: main$/Components: main contrib non-free non-free-firmware/' "$sources"
fi

echo "install-cuda: installing nvidia-cuda-toolkit libcuda1"
# Another apt client (a parallel install) holds the dpkg lock for a while: wait for it.
lock="-o DPkg::Lock::Timeout=900"
# shellcheck disable=SC2086 # $lock is two words on purpose
$sudo apt-get $lock update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get $lock install -y --no-install-recommends nvidia-cuda-toolkit libcuda1
nvcc --version | tail -n 1
