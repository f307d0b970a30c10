//go:build gmcuda && gmcudaemu

// The kernels of convfit.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "convfit.cu"
