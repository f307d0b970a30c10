//go:build gmcuda && gmcudaemu

// The kernels of keeplargest.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "keeplargest.cu"
