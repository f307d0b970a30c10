//go:build gmcudaemu

// The kernels of relufit.cu, compiled for the host under cuda_emu.h.
#include "cuda_emu.h"
#include "../relufit.cu"
