//go:build gmcudaemu

// The kernels of conv.cu, compiled for the host under cuda_emu.h.
#include "cuda_emu.h"
#include "../conv.cu"
