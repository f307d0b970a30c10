//go:build gmcudaemu

// The kernels of integrate.cu, compiled for the host under cuda_emu.h.
#include "cuda_emu.h"
#include "../integrate.cu"
