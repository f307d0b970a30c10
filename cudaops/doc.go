// Package cudaops runs the Gaussian-mixture kernels of package ops on an
// NVIDIA GPU through the CUDA driver API (gorgonia.org/cu).
//
// The kernels are CUDA C++ templates in the *.cu files of this directory,
// compiled ahead of time to PTX for a virtual architecture (scripts/ptx.sh,
// `make ptx`); the PTX is committed under ptx/ and embedded, so building needs
// no CUDA compiler, and the driver JIT-compiles it for whatever GPU it finds.
//
// Everything that talks to the driver is guarded by the build tag gmcuda:
// gorgonia.org/cu initialises CUDA in its init function and exits the process
// when no GPU is present, so it must never be linked into the default build.
// Without the tag this package only embeds the PTX text.
//
// With -tags gmcuda, Open starts one CUDA context on device 0, owned by one
// OS thread that serialises every driver call; modules are loaded once and
// device buffers are kept per argument slot and reused across calls.
// Kernels[T] implements the seam device.Kernels[T] on that context: its
// methods take host slices in the packed layout of package mixture, and the
// computations without a GPU kernel go to a fallback device, all in
// fallback_gmcuda.go. NewDevice makes the device.Device that package ops
// runs on; the package imports neither ops nor ops/cpu.
//
// docs/cuda.md describes the kernels' design, the one-line command that
// checks every GPU kernel against the CPU kernels, and what has and has not
// been verified on a GPU.
package cudaops
