// Package cudaops runs the Gaussian-mixture kernels of package ops on an
// NVIDIA GPU through the CUDA driver API (gorgonia.org/cu), or on the CPU
// through an emulated CUDA device that runs the same kernels.
//
// The kernels are CUDA C++ templates in the *.cu files of this directory,
// compiled ahead of time to PTX for a virtual architecture (scripts/ptx.sh,
// `make ptx`); the PTX is committed under ptx/ and embedded, so building needs
// no CUDA compiler, and the driver JIT-compiles it for whatever GPU it finds.
//
// Everything that talks to a driver is guarded by the build tag gmcuda:
// gorgonia.org/cu initialises CUDA in its init function and exits the process
// when no GPU is present, so it must never be linked into the default build.
// Without the tag this package only embeds the PTX text.
//
// With -tags gmcuda, Open starts one CUDA context on device 0, owned by one
// OS thread that serialises every driver call; modules are loaded once and
// device buffers are kept per argument slot and reused across calls. The
// Device runs over a small driver interface (driver.go): gorgonia.org/cu
// (driver_cu.go), or, with the tags gmcuda and gmcudaemu, the emulator
// (driver_emu.go, emu_*.cc): the .cu sources compiled by the host C++
// compiler under emu_cuda.h, every CUDA thread a fiber with real barriers
// and warp collectives, device memory sized exactly so that
// AddressSanitizer sees an access past it. Device.Traffic counts the bytes
// either driver moves. Kernels[T] implements the seam device.Kernels[T] on
// the Device: its methods take host slices in the packed layout of package
// mixture, and the computations without a GPU kernel go to a fallback
// device, all in fallback_gmcuda.go. NewDevice makes the device.Device that
// package ops runs on; the package imports neither ops nor ops/cpu.
//
// docs/cuda.md describes the kernels' design, the emulated device, the
// one-call check on a GPU machine, and what has been measured on which GPU.
package cudaops
