//go:build gmcuda && gmcudaemu

// The kernels of evaluate.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "evaluate.cu"
