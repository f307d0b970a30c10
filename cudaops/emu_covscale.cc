//go:build gmcuda && gmcudaemu

// The kernels of covscale.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "covscale.cu"
