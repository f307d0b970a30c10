//go:build gmcuda

package cudaops

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
	"gorgonia.org/cu"
)

// Device is one CUDA context on one GPU. A CUDA context is current per OS
// thread, so a Device owns one locked OS thread that makes every driver call
// (do); concurrent callers queue and their calls run one after another.
type Device struct {
	name  string
	cc    [2]int
	mem   int64
	work  chan func()
	fns   map[string]cu.Function
	slots [numSlots]buffer
	// events are the start and stop events of kernel timing, made on first use.
	events [2]cu.Event
}

// buffer is a device allocation that grows on demand and is otherwise
// reused across calls.
type buffer struct {
	ptr   cu.DevicePtr
	bytes int64
}

// Argument slots: each launcher puts its inputs, outputs and scratch into
// fixed slots, so repeated calls of the same shapes allocate nothing.
const (
	slotIn0 = iota
	slotIn1
	slotIn2
	slotIn3
	slotOut
	slotOut1
	slotOut2
	slotWork
	numSlots
)

// poison makes every launcher fill its output buffers with NaN before the
// kernel runs, so an element a kernel forgets to write shows up as NaN. The
// equivalence tests set it.
var poison bool

var (
	defaultOnce sync.Once
	defaultDev  *Device
	defaultErr  error
)

// Default returns the process's Device on GPU 0, opening it on first use and
// printing which GPU it uses to standard error.
func Default() (*Device, error) {
	defaultOnce.Do(func() {
		defaultDev, defaultErr = Open(0)
		if defaultErr == nil {
			fmt.Fprintf(os.Stderr, "gmcn: running GM ops on CUDA device 0: %s\n", defaultDev)
		}
	})
	return defaultDev, defaultErr
}

// Open creates a context on GPU ordinal and loads every embedded module.
func Open(ordinal int) (*Device, error) {
	d := &Device{work: make(chan func()), fns: map[string]cu.Function{}}
	ready := make(chan error)
	go d.serve(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// serve is the Device's thread: it creates the context, loads the modules,
// then runs queued calls until the process ends.
func (d *Device) serve(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	err := d.init(ordinal)
	ready <- err
	if err != nil {
		return
	}
	for f := range d.work {
		f()
	}
}

func (d *Device) init(ordinal int) error {
	n, err := cu.NumDevices()
	if err != nil {
		return errors.Wrap(err, "cudaops: counting CUDA devices")
	}
	if ordinal < 0 || ordinal >= n {
		return errors.Errorf("cudaops: device %d requested, %d present", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return errors.Wrapf(err, "cudaops: device %d", ordinal)
	}
	if d.name, err = dev.Name(); err != nil {
		return errors.Wrap(err, "cudaops: device name")
	}
	if d.cc[0], err = dev.Attribute(cu.ComputeCapabilityMajor); err != nil {
		return errors.Wrap(err, "cudaops: compute capability")
	}
	if d.cc[1], err = dev.Attribute(cu.ComputeCapabilityMinor); err != nil {
		return errors.Wrap(err, "cudaops: compute capability")
	}
	if d.mem, err = dev.TotalMem(); err != nil {
		return errors.Wrap(err, "cudaops: device memory")
	}
	if _, err = dev.MakeContext(cu.SchedAuto); err != nil {
		return errors.Wrap(err, "cudaops: creating the context")
	}
	for _, name := range Modules() {
		src, _ := PTX(name)
		mod, err := cu.LoadData(src)
		if err != nil {
			return errors.Wrapf(err, "cudaops: loading (JIT-compiling) module %s", name)
		}
		for _, fn := range kernelNames(src) {
			f, err := mod.Function(fn)
			if err != nil {
				return errors.Wrapf(err, "cudaops: module %s: kernel %s", name, fn)
			}
			d.fns[fn] = f
		}
	}
	return nil
}

// kernelNames lists the .entry names of a PTX module.
func kernelNames(ptx string) []string {
	var names []string
	const tag = ".entry "
	for rest := ptx; ; {
		i := strings.Index(rest, tag)
		if i < 0 {
			return names
		}
		rest = rest[i+len(tag):]
		j := 0
		for j < len(rest) && rest[j] != '(' && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		names = append(names, rest[:j])
	}
}

// String names the GPU, its compute capability and memory.
func (d *Device) String() string {
	return fmt.Sprintf("%s (compute %d.%d, %.1f GiB)", d.name, d.cc[0], d.cc[1], float64(d.mem)/(1<<30))
}

// do runs f on the Device's thread, where the context is current, and
// returns its error.
func (d *Device) do(f func() error) error {
	done := make(chan error)
	d.work <- func() { done <- f() }
	return <-done
}

// buf returns slot's buffer with room for at least bytes, reallocating only
// when it is too small. Called on the Device's thread.
func (d *Device) buf(slot int, bytes int64) (cu.DevicePtr, error) {
	b := &d.slots[slot]
	bytes = max(bytes, 8)
	if b.bytes >= bytes {
		return b.ptr, nil
	}
	if b.bytes > 0 {
		if err := cu.MemFree(b.ptr); err != nil {
			return 0, errors.Wrap(err, "cudaops: freeing a buffer")
		}
		b.bytes = 0
	}
	p, err := cu.MemAlloc(bytes)
	if err != nil {
		return 0, errors.Wrapf(err, "cudaops: allocating %d bytes", bytes)
	}
	b.ptr, b.bytes = p, bytes
	return p, nil
}

// Float is the element type of every launcher.
type Float = mixture.Float

func sizeOf[T Float]() int64 {
	var z T
	return int64(unsafe.Sizeof(z))
}

// suffix is the kernel name suffix for T.
func suffix[T Float]() string {
	if sizeOf[T]() == 4 {
		return "_f32"
	}
	return "_f64"
}

// upload copies h into slot and returns the device pointer.
func upload[T Float](d *Device, slot int, h []T) (cu.DevicePtr, error) {
	n := int64(len(h)) * sizeOf[T]()
	p, err := d.buf(slot, n)
	if err != nil || n == 0 {
		return p, err
	}
	return p, errors.Wrap(cu.MemcpyHtoD(p, unsafe.Pointer(&h[0]), n), "cudaops: copy to device")
}

// output returns slot's buffer for count values of T, poisoned with NaN
// when the tests ask for it (the pattern 0x7FF80000 repeated is a NaN as
// float32 and as float64).
func output[T Float](d *Device, slot int, count int) (cu.DevicePtr, error) {
	n := int64(count) * sizeOf[T]()
	p, err := d.buf(slot, n)
	if err != nil || !poison || n == 0 {
		return p, err
	}
	return p, errors.Wrap(cu.MemsetD32(p, 0x7FF80000, n/4), "cudaops: poisoning an output")
}

// download copies len(h) values from p into h.
func download[T Float](h []T, p cu.DevicePtr) error {
	if len(h) == 0 {
		return nil
	}
	n := int64(len(h)) * sizeOf[T]()
	return errors.Wrap(cu.MemcpyDtoH(unsafe.Pointer(&h[0]), p, n), "cudaops: copy from device")
}

// launch runs kernel name on a grid of grid blocks of block threads with
// shared bytes of dynamic shared memory and waits for it. Every argument
// becomes one 8-byte kernel parameter: device pointers and ints as 64-bit
// integers, float64 as its bits.
func (d *Device) launch(name string, grid [2]int, block, shared int, args ...any) error {
	f, ok := d.fns[name]
	if !ok {
		return errors.Errorf("cudaops: kernel %s is not in the embedded PTX", name)
	}
	if grid[0] == 0 || grid[1] == 0 {
		return nil
	}
	vals := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			vals[i] = uint64(v)
		case int:
			vals[i] = uint64(int64(v))
		case float64:
			vals[i] = math.Float64bits(v)
		default:
			return errors.Errorf("cudaops: kernel %s: argument %d has unsupported type %T", name, i, a)
		}
		ptrs[i] = unsafe.Pointer(&vals[i])
	}
	if kernelTimes != nil {
		return d.timed(name, func() error { return d.launchSync(f, name, grid, block, shared, ptrs) })
	}
	return d.launchSync(f, name, grid, block, shared, ptrs)
}

func (d *Device) launchSync(f cu.Function, name string, grid [2]int, block, shared int, ptrs []unsafe.Pointer) error {
	if err := f.LaunchAndSync(grid[0], grid[1], 1, block, 1, 1, shared, cu.NoStream, ptrs); err != nil {
		return errors.Wrapf(err, "cudaops: kernel %s (grid %v, block %d, shared %d B)", name, grid, block, shared)
	}
	return nil
}

// kernelTimes, when not nil, receives the duration in milliseconds of every
// kernel launch, measured with CUDA events around it; the benchmarks set it.
var kernelTimes map[string][]float64

// timed runs launch between two recorded events and appends the elapsed
// time to kernelTimes[name].
func (d *Device) timed(name string, launch func() error) error {
	if d.events[0] == (cu.Event{}) {
		for i := range d.events {
			ev, err := cu.MakeEvent(cu.DefaultEvent)
			if err != nil {
				return errors.Wrap(err, "cudaops: creating a timing event")
			}
			d.events[i] = ev
		}
	}
	start, stop := d.events[0], d.events[1]
	if err := start.Record(cu.NoStream); err != nil {
		return errors.Wrap(err, "cudaops: recording an event")
	}
	if err := launch(); err != nil {
		return err
	}
	if err := stop.Record(cu.NoStream); err != nil {
		return errors.Wrap(err, "cudaops: recording an event")
	}
	if err := stop.Synchronize(); err != nil {
		return errors.Wrap(err, "cudaops: waiting for an event")
	}
	ms, err := start.Elapsed(stop)
	if err != nil {
		return errors.Wrap(err, "cudaops: event timing")
	}
	kernelTimes[name] = append(kernelTimes[name], ms)
	return nil
}

// blocks returns ⌈n/b⌉.
func blocks(n, b int) int { return (n + b - 1) / b }
