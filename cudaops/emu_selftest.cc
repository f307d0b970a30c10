//go:build gmcuda && gmcudaemu

// The kernels of selftest.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "selftest.cu"
