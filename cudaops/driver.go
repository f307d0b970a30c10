//go:build gmcuda

package cudaops

import "unsafe"

// devPtr is an address in device memory.
type devPtr uint64

// driver is what a Device needs of CUDA: memory, copies, modules, launches
// and timing events. Two implement it: gorgonia.org/cu, the real driver
// (driver_cu.go), and the emulator, which runs the same kernels compiled
// for the CPU (driver_emu.go and emu_runtime.cc, build tag gmcudaemu), so
// the Device and every launcher are the same code on both. Every method is
// called on the Device's thread.
type driver interface {
	// open starts a context on GPU ordinal and describes the device.
	open(ordinal int) (deviceInfo, error)
	alloc(bytes int64) (devPtr, error)
	free(p devPtr) error
	copyToDevice(dst devPtr, src unsafe.Pointer, bytes int64) error
	copyFromDevice(dst unsafe.Pointer, src devPtr, bytes int64) error
	memsetD32(dst devPtr, v uint32, count int64) error
	// load loads the PTX module name and returns its kernels by name.
	load(name, ptx string, kernels []string) (map[string]kernelFunc, error)
	// synchronize waits for every launch to finish and reports a failure.
	synchronize() error
	newEvent() (event, error)
}

// kernelFunc is a loaded kernel.
type kernelFunc interface {
	// launch starts the kernel on a grid of blocks of block threads with
	// shared bytes of dynamic shared memory; every parameter is one 8-byte
	// value (pointers and integers as themselves, float64 as its bits).
	launch(grid [2]int, block, shared int, params []uint64) error
}

// event is a point in the device's stream of work, for timing kernels.
type event interface {
	record() error
	synchronize() error
	// sinceMs returns the milliseconds between start and this event.
	sinceMs(start event) (float64, error)
}

// deviceInfo describes the device a driver opened.
type deviceInfo struct {
	name string
	cc   [2]int
	mem  int64
	// emulated marks the emulator: the Device then sizes every buffer
	// exactly instead of reusing larger ones, so that AddressSanitizer sees
	// an access past the data of the call.
	emulated bool
}
