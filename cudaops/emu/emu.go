//go:build gmcudaemu

package emu

/*
#cgo CXXFLAGS: -std=c++17
#cgo LDFLAGS: -lstdc++
#include <stdlib.h>
#include "emu.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/pkg/errors"
)

// Ptr is an address in emulated device memory.
type Ptr uint64

// MaxShared is the dynamic shared memory a launch may ask for, in bytes: the
// 48 KiB a CUDA kernel gets without opting in to more.
var MaxShared = int(C.gmemu_max_shared())

// Workers returns the number of worker threads that run blocks (the CPU's
// cores, at most 8; the environment variable GMCN_CUDAEMU_WORKERS sets it).
func Workers() int { return int(C.gmemu_workers()) }

// ASan reports whether the emulator was compiled with AddressSanitizer.
func ASan() bool { return C.gmemu_asan() != 0 }

// failure turns a message of the C side into an error and frees it.
func failure(msg *C.char) error {
	if msg == nil {
		return nil
	}
	defer C.free(unsafe.Pointer(msg))
	return errors.New("cuda emulator: " + C.GoString(msg))
}

// Alloc allocates bytes of device memory.
func Alloc(bytes int64) (Ptr, error) {
	var p C.uint64_t
	err := failure(C.gmemu_alloc(C.size_t(bytes), &p))
	return Ptr(p), err
}

// Free releases an allocation made by Alloc.
func Free(p Ptr) error { return failure(C.gmemu_free(C.uint64_t(p))) }

// CopyToDevice copies bytes from host memory at src to dst.
func CopyToDevice(dst Ptr, src unsafe.Pointer, bytes int64) error {
	return failure(C.gmemu_copy_htod(C.uint64_t(dst), src, C.size_t(bytes)))
}

// CopyFromDevice copies bytes from src to host memory at dst.
func CopyFromDevice(dst unsafe.Pointer, src Ptr, bytes int64) error {
	return failure(C.gmemu_copy_dtoh(dst, C.uint64_t(src), C.size_t(bytes)))
}

// MemsetD32 sets count 32-bit words at dst to v.
func MemsetD32(dst Ptr, v uint32, count int64) error {
	return failure(C.gmemu_memset_d32(C.uint64_t(dst), C.uint32_t(v), C.size_t(count)))
}

// Kernel is a compiled kernel, found by its name.
type Kernel struct {
	name   string
	handle C.int
}

// Lookup returns the kernel of the given name (a .entry name of the PTX).
func Lookup(name string) (Kernel, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	h := C.gmemu_kernel(cs)
	if h < 0 {
		return Kernel{}, errors.Errorf("cuda emulator: no kernel %s is compiled in (is its .cu file included by a .cc file of cudaops/emu?)", name)
	}
	return Kernel{name, h}, nil
}

// Launch runs the kernel on a grid of blocks of threads with shared bytes of
// dynamic shared memory and returns when every block has finished. Each
// parameter is one 8-byte kernel parameter.
func (k Kernel) Launch(grid, block [3]int, shared int, params []uint64) error {
	var g, b [3]C.uint
	for i := range 3 {
		if grid[i] < 0 || block[i] < 0 || grid[i] > 1<<32-1 || block[i] > 1<<32-1 {
			return errors.Errorf("cuda emulator: kernel %s: grid %v, block %v out of range", k.name, grid, block)
		}
		g[i], b[i] = C.uint(grid[i]), C.uint(block[i])
	}
	var p *C.uint64_t
	if len(params) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&params[0]))
	}
	return failure(C.gmemu_launch(k.handle, &g[0], &b[0], C.size_t(shared), p, C.int(len(params))))
}

// Schedule is the order in which the threads of a block run between two
// barriers.
type Schedule int

// The schedules: thread 0 first, the last thread first, or a new random
// order at every barrier, drawn from a seed and the launch's place.
const (
	Forward Schedule = iota
	Reverse
	Shuffled
)

// String names the schedule as ParseSchedule reads it.
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

// ParseSchedule reads "forward", "reverse" or "shuffled" (with an optional
// seed: "shuffled:7"; the default seed is 1).
func ParseSchedule(s string) (Schedule, uint64, error) {
	name, seedText, hasSeed := strings.Cut(s, ":")
	for _, sc := range []Schedule{Forward, Reverse, Shuffled} {
		if name != sc.String() {
			continue
		}
		if !hasSeed {
			return sc, 1, nil
		}
		seed, err := strconv.ParseUint(seedText, 10, 64)
		if err != nil || sc != Shuffled {
			return 0, 0, errors.Errorf("cuda emulator schedule %q: only shuffled takes a seed, a non-negative integer", s)
		}
		return sc, seed, nil
	}
	return 0, 0, errors.Errorf("cuda emulator schedule %q: want forward, reverse or shuffled[:seed]", s)
}

// SetSchedule sets the schedule of the launches that follow.
func SetSchedule(s Schedule, seed uint64) { C.gmemu_configure(C.int(s), C.uint64_t(seed)) }

// ScheduleEnv is the environment variable that sets the schedule at start:
// forward (the default), reverse or shuffled[:seed].
const ScheduleEnv = "GMCN_CUDAEMU_SCHEDULE"

// EnvSchedule returns the schedule ScheduleEnv asks for (forward when unset)
// and whether it was set.
func EnvSchedule() (Schedule, uint64, error) {
	v, ok := os.LookupEnv(ScheduleEnv)
	if !ok || v == "" {
		return Forward, 1, nil
	}
	s, seed, err := ParseSchedule(v)
	if err != nil {
		return 0, 0, errors.Wrap(err, ScheduleEnv)
	}
	return s, seed, nil
}
