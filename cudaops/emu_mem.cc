//go:build gmcuda && gmcudaemu

// The kernels of mem.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "mem.cu"
