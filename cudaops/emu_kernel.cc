//go:build gmcuda && gmcudaemu

// The kernels of kernel.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "kernel.cu"
