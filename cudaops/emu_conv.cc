//go:build gmcuda && gmcudaemu

// The kernels of conv.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "conv.cu"
