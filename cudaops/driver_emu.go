//go:build gmcuda && gmcudaemu

package cudaops

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/gmcn-go/gmcn/cudaops/emu"
)

// emuDriver runs the kernels on the CUDA emulator of package emu: the same
// .cu sources compiled for the CPU.
type emuDriver struct{}

func newDriver() (driver, error) {
	s, seed, err := emu.EnvSchedule()
	if err != nil {
		return nil, err
	}
	emu.SetSchedule(s, seed)
	return emuDriver{}, nil
}

func (emuDriver) open(ordinal int) (deviceInfo, error) {
	if ordinal != 0 {
		return deviceInfo{}, fmt.Errorf("cudaops: device %d requested, the emulator has 1", ordinal)
	}
	s, _, _ := emu.EnvSchedule()
	asan := ""
	if emu.ASan() {
		asan = ", AddressSanitizer"
	}
	return deviceInfo{
		name:     fmt.Sprintf("emulated CUDA device (%d CPU workers, %s schedule%s)", emu.Workers(), s, asan),
		cc:       [2]int{7, 0}, // the PTX's virtual architecture
		emulated: true,
	}, nil
}

func (emuDriver) alloc(bytes int64) (devPtr, error) {
	p, err := emu.Alloc(bytes)
	return devPtr(p), err
}

func (emuDriver) free(p devPtr) error { return emu.Free(emu.Ptr(p)) }

func (emuDriver) copyToDevice(dst devPtr, src unsafe.Pointer, bytes int64) error {
	return emu.CopyToDevice(emu.Ptr(dst), src, bytes)
}

func (emuDriver) copyFromDevice(dst unsafe.Pointer, src devPtr, bytes int64) error {
	return emu.CopyFromDevice(dst, emu.Ptr(src), bytes)
}

func (emuDriver) memsetD32(dst devPtr, v uint32, count int64) error {
	return emu.MemsetD32(emu.Ptr(dst), v, count)
}

func (emuDriver) load(name, _ string, kernels []string) (map[string]kernelFunc, error) {
	fns := make(map[string]kernelFunc, len(kernels))
	for _, k := range kernels {
		f, err := emu.Lookup(k)
		if err != nil {
			return nil, fmt.Errorf("cudaops: module %s: %w", name, err)
		}
		fns[k] = emuKernel{f}
	}
	return fns, nil
}

// synchronize has nothing to wait for: an emulated launch returns when its
// grid has finished.
func (emuDriver) synchronize() error { return nil }

func (emuDriver) newEvent() (event, error) { return &emuEvent{}, nil }

type emuKernel struct{ k emu.Kernel }

func (k emuKernel) launch(grid [2]int, block, shared int, params []uint64) error {
	return k.k.Launch([3]int{grid[0], grid[1], 1}, [3]int{block, 1, 1}, shared, params)
}

// emuEvent is a wall-clock time.
type emuEvent struct{ t time.Time }

func (e *emuEvent) record() error      { e.t = time.Now(); return nil }
func (e *emuEvent) synchronize() error { return nil }

func (e *emuEvent) sinceMs(start event) (float64, error) {
	return float64(e.t.Sub(start.(*emuEvent).t)) / float64(time.Millisecond), nil
}
