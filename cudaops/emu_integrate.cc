//go:build gmcuda && gmcudaemu

// The kernels of integrate.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "integrate.cu"
