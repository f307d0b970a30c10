//go:build gmcuda && gmcudaemu

// The kernels of treehem.cu, compiled for the host under emu_cuda.h.
#include "emu_cuda.h"
#include "treehem.cu"
