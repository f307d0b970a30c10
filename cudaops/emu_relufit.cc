//go:build gmcuda && gmcudaemu

// The kernels of relufit.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "relufit.cu"
