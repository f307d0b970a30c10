//go:build gmcuda && gmcudaemu

// The kernels of standardise.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "standardise.cu"
