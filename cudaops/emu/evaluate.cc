//go:build gmcudaemu

// The kernels of evaluate.cu, compiled for the host under cuda_emu.h.
#include "cuda_emu.h"
#include "../evaluate.cu"
