//go:build gmcudaemu

// The kernels of kernel.cu, compiled for the host under cuda_emu.h.
#include "cuda_emu.h"
#include "../kernel.cu"
