//go:build gmcuda && gmcudaemu

package cudaops

/*
#cgo CXXFLAGS: -std=c++17
#cgo LDFLAGS: -lstdc++
#include <stdlib.h>
#include "emu_api.h"
*/
import "C"

import (
	"embed"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/pkg/errors"
)

// kernelSources are the CUDA sources that the emu_*.cc files compile. They
// are embedded only so that the go command, which tracks a package's
// embedded files but not the files its C++ includes, rebuilds the emulator
// when a kernel changes.
//
//go:embed *.cu *.cuh
var kernelSources embed.FS

// emuDriver runs the kernels on the CUDA emulator (emu_runtime.cc): the same
// .cu sources compiled for the CPU, each CUDA thread a fiber of a worker
// thread (docs/cuda.md, "The emulated device").
type emuDriver struct{}

func newDriver() (driver, error) {
	s, seed, err := envSchedule()
	if err != nil {
		return nil, err
	}
	setSchedule(s, seed)
	return emuDriver{}, nil
}

func (emuDriver) open(ordinal int) (deviceInfo, error) {
	if ordinal != 0 {
		return deviceInfo{}, errors.Errorf("cudaops: device %d requested, the emulator has 1", ordinal)
	}
	s, seed, _ := envSchedule()
	sched := s.String()
	if s == Shuffled {
		sched += fmt.Sprintf(" (seed %d)", seed)
	}
	asan := ""
	if C.gmemu_asan() != 0 {
		asan = ", AddressSanitizer"
	}
	return deviceInfo{
		name:     fmt.Sprintf("emulated CUDA device (%d CPU workers, %s schedule%s)", int(C.gmemu_workers()), sched, asan),
		cc:       [2]int{7, 0}, // the PTX's virtual architecture
		emulated: true,
	}, nil
}

// failure turns a message of the C side into an error and frees it.
func failure(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New("cuda emulator: " + C.GoString(msg))
}

func (emuDriver) alloc(bytes int64) (devPtr, error) {
	var p C.uint64_t
	err := failure(C.gmemu_alloc(C.size_t(bytes), &p))
	return devPtr(p), err
}

func (emuDriver) free(p devPtr) error { return failure(C.gmemu_free(C.uint64_t(p))) }

func (emuDriver) copyToDevice(dst devPtr, src unsafe.Pointer, bytes int64) error {
	return failure(C.gmemu_copy_htod(C.uint64_t(dst), src, C.size_t(bytes)))
}

func (emuDriver) copyFromDevice(dst unsafe.Pointer, src devPtr, bytes int64) error {
	return failure(C.gmemu_copy_dtoh(dst, C.uint64_t(src), C.size_t(bytes)))
}

func (emuDriver) memsetD32(dst devPtr, v uint32, count int64) error {
	return failure(C.gmemu_memset_d32(C.uint64_t(dst), C.uint32_t(v), C.size_t(count)))
}

// load finds each kernel of the module among those the emu_*.cc files
// compiled in, so a .cu file without its emu_*.cc fails here.
func (emuDriver) load(name, _ string, kernels []string) (map[string]kernelFunc, error) {
	fns := make(map[string]kernelFunc, len(kernels))
	for _, k := range kernels {
		cs := C.CString(k)
		h := C.gmemu_kernel(cs)
		C.free(unsafe.Pointer(cs))
		if h < 0 {
			return nil, errors.Errorf("cudaops: module %s: kernel %s is not compiled into the emulator (does cudaops/emu_%s.cc include %s.cu?)", name, k, name, name)
		}
		fns[k] = emuKernel{k, h}
	}
	return fns, nil
}

// synchronize has nothing to wait for: an emulated launch returns when its
// grid has finished.
func (emuDriver) synchronize() error { return nil }

func (emuDriver) newEvent() (event, error) { return &emuEvent{}, nil }

type emuKernel struct {
	name   string
	handle C.int
}

func (k emuKernel) launch(grid [2]int, block, shared int, params []uint64) error {
	dims := [6]int{grid[0], grid[1], 1, block, 1, 1}
	var c [6]C.uint
	for i, v := range dims {
		if v < 0 || v > 1<<32-1 {
			return errors.Errorf("cuda emulator: kernel %s: grid %v, block %d out of range", k.name, grid, block)
		}
		c[i] = C.uint(v)
	}
	var p *C.uint64_t
	if len(params) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&params[0]))
	}
	return failure(C.gmemu_launch(k.handle, &c[0], &c[3], C.size_t(shared), p, C.int(len(params))))
}

// emuEvent is a wall-clock time.
type emuEvent struct{ t time.Time }

func (e *emuEvent) record() error      { e.t = time.Now(); return nil }
func (e *emuEvent) synchronize() error { return nil }

func (e *emuEvent) sinceMs(start event) (float64, error) {
	return float64(e.t.Sub(start.(*emuEvent).t)) / float64(time.Millisecond), nil
}

// Schedule is the order in which the emulator runs the threads of a block
// between two barriers.
type Schedule int

// The schedules: thread 0 first, the last thread first, or a new random
// order at every barrier, drawn from a seed and the launch's place.
const (
	Forward Schedule = iota
	Reverse
	Shuffled
)

// String names the schedule as ScheduleEnv reads it.
func (s Schedule) String() string {
	switch s {
	case Forward:
		return "forward"
	case Reverse:
		return "reverse"
	case Shuffled:
		return "shuffled"
	}
	return fmt.Sprintf("Schedule(%d)", int(s))
}

// ScheduleEnv is the environment variable that sets the emulator's schedule
// when the device opens: forward (the default), reverse or shuffled[:seed].
const ScheduleEnv = "GMCN_CUDAEMU_SCHEDULE"

// envSchedule reads ScheduleEnv: "forward", "reverse" or "shuffled" with an
// optional seed ("shuffled:7"; the default seed is 1).
func envSchedule() (Schedule, uint64, error) {
	v := os.Getenv(ScheduleEnv)
	if v == "" {
		return Forward, 1, nil
	}
	name, seedText, hasSeed := strings.Cut(v, ":")
	for _, s := range []Schedule{Forward, Reverse, Shuffled} {
		if name != s.String() {
			continue
		}
		if !hasSeed {
			return s, 1, nil
		}
		seed, err := strconv.ParseUint(seedText, 10, 64)
		if err != nil || s != Shuffled {
			break
		}
		return s, seed, nil
	}
	return 0, 0, errors.Errorf("%s=%q: want forward, reverse or shuffled[:seed], the seed a non-negative integer", ScheduleEnv, v)
}

// setSchedule sets the schedule of the launches that follow.
func setSchedule(s Schedule, seed uint64) { C.gmemu_configure(C.int(s), C.uint64_t(seed)) }
