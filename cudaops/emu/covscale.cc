//go:build gmcudaemu

// The kernels of covscale.cu, compiled for the host under cuda_emu.h.
#include "cuda_emu.h"
#include "../covscale.cu"
