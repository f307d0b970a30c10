//go:build gmcuda && gmcudaemu

// The kernels of targets.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "targets.cu"
