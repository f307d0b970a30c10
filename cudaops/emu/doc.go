// Package emu is a CUDA device emulated on the CPU, for testing the kernels
// of package cudaops where no GPU is: the build tag gmcudaemu compiles the
// same .cu sources with the host C++ compiler under cuda_emu.h, which
// provides what the kernels use of CUDA (thread and block indices, dynamic
// shared memory, __syncthreads, warp shuffles and votes, atomics, the math
// functions).
//
// A launch runs every block of the grid on a pool of worker threads; the
// threads of a block are fibers that run one after another between two
// barriers, in an order the schedule chooses: Forward, Reverse or Shuffled.
// Results that change with the schedule are races (a missing __syncthreads,
// a reduction that reads what another thread has not yet written), and the
// tests run the kernels under several schedules to find them. Unwritten
// shared memory reads as NaN. Device memory is host memory of exactly the
// requested size, so a test binary built with AddressSanitizer (go test
// -asan, CGO_CXXFLAGS=-fsanitize=address; `make cuda-emu-test`) stops at the
// first out-of-bounds access of a kernel and names the kernel, block and
// thread. What CUDA leaves undefined and the emulator can see fails the
// launch with an error: a warp collective whose mask names an exited lane,
// a barrier some threads never reach, a launch outside CUDA's limits, a
// kernel called with the wrong number of parameters, a copy past the end of
// an allocation.
//
// Without the tag the package is this comment. cudaops uses it as the
// driver of its Device in a build with the tags gmcuda and gmcudaemu.
package emu
