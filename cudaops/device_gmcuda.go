//go:build gmcuda

package cudaops

import (
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/pkg/errors"
)

// Device is one CUDA context on one GPU, or the emulated device in a build
// with the tag gmcudaemu. A CUDA context is current per OS thread, so a
// Device owns one locked OS thread that makes every driver call (do);
// concurrent callers queue and their calls run one after another.
type Device struct {
	drv   driver
	info  deviceInfo
	work  chan func()
	fns   map[string]kernelFunc
	slots [numSlots]buffer
	// events are the start and stop events of kernel timing, made on first use.
	events [2]event
	// times, when not nil, collects every launch's and copy's duration
	// (timing_gmcuda.go); touched only on the Device's thread.
	times map[string][]time.Duration
	// blockGen counts the block backward calls that wrote slotBlockDV and
	// slotBlockDC (block_gmcuda.go); touched only on the Device's thread.
	blockGen uint64
	// unsynced names the kernels launched since the host last waited for
	// the device's work, oldest first; touched only on the Device's thread.
	// A kernel that fails while running shows at that wait (waited).
	unsynced []string
	// pool holds the device memory saved states own from a forward to its
	// backward (blockBufs), freed by them for the next state of its size.
	pool struct {
		sync.Mutex
		free map[int64][]devPtr
	}
	// traffic counts what the Device moved and launched.
	hostToDevice, deviceToHost, launches atomic.Int64
	// busy sums the nanoseconds callers spent in do.
	busy atomic.Int64
}

// buffer is a device allocation that grows on demand and is otherwise
// reused across calls.
type buffer struct {
	ptr   devPtr
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
	slotScratch
	// A block's intermediates (block_gmcuda.go), which live through the
	// other computations' slots.
	slotBlockV
	slotBlockR
	slotBlockDR
	slotBlockDV
	slotBlockDY
	slotBlockDC // a fused block's gradient of every convolved Gaussian
	// A fused block's exact targets: the convolution, the points, the
	// targets, and the gradients of the targets, the points and the
	// convolution.
	slotBlockC
	slotBlockP
	slotBlockT
	slotBlockDT
	slotBlockDP
	slotBlockDE
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
	drv, err := newDriver()
	if err != nil {
		return nil, err
	}
	d := &Device{drv: drv, work: make(chan func()), fns: map[string]kernelFunc{}}
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
	info, err := d.drv.open(ordinal)
	if err != nil {
		return err
	}
	d.info = info
	for _, name := range Modules() {
		src, _ := PTX(name)
		fns, err := d.drv.load(name, src, kernelNames(src))
		if err != nil {
			return err
		}
		maps.Copy(d.fns, fns)
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
	if d.info.emulated {
		return d.info.name
	}
	return fmt.Sprintf("%s (compute %d.%d, %.1f GiB)", d.info.name, d.info.cc[0], d.info.cc[1], float64(d.info.mem)/(1<<30))
}

// Traffic is what a Device has moved across the bus and launched.
type Traffic struct {
	// HostToDevice and DeviceToHost are bytes copied each way.
	HostToDevice, DeviceToHost int64
	// Launches counts kernel launches.
	Launches int64
}

// Sub returns t − u, the traffic between two readings.
func (t Traffic) Sub(u Traffic) Traffic {
	return Traffic{t.HostToDevice - u.HostToDevice, t.DeviceToHost - u.DeviceToHost, t.Launches - u.Launches}
}

// Traffic returns what the Device has moved and launched since it opened;
// the difference of two readings is what the calls between them did.
func (d *Device) Traffic() Traffic {
	return Traffic{d.hostToDevice.Load(), d.deviceToHost.Load(), d.launches.Load()}
}

// Busy returns the wall time callers have spent in the Device's calls since
// it opened: queueing, copies, kernels and the waits for them (calls made
// by several goroutines at once each count in full). A training
// step's time less its Busy time is the host's own work (Gorgonia, the
// checks, the fallback, the optimiser), measured without timing each launch
// and on the emulated device as on a GPU.
func (d *Device) Busy() time.Duration { return time.Duration(d.busy.Load()) }

// do runs f on the Device's thread, where the context is current, and
// returns its error.
func (d *Device) do(f func() error) error {
	start := time.Now()
	defer func() { d.busy.Add(int64(time.Since(start))) }()
	done := make(chan error)
	d.work <- func() { done <- f() }
	return <-done
}

// buf returns slot's buffer with room for at least bytes, reallocating only
// when it is too small (on the emulator: whenever the size changes, so that
// every buffer ends where the call's data ends). Called on the Device's
// thread.
func (d *Device) buf(slot int, bytes int64) (devPtr, error) {
	b := &d.slots[slot]
	bytes = max(bytes, 8)
	if b.bytes == bytes || b.bytes > bytes && !d.info.emulated {
		return b.ptr, nil
	}
	if b.bytes > 0 {
		// A kernel of this call still running may read the buffer.
		if err := d.finish(); err != nil {
			return 0, err
		}
		if err := d.drv.free(b.ptr); err != nil {
			return 0, errors.Wrap(err, "cudaops: freeing a buffer")
		}
		b.bytes = 0
	}
	p, err := d.drv.alloc(bytes)
	if err != nil {
		return 0, errors.Wrapf(err, "cudaops: allocating %d bytes", bytes)
	}
	b.ptr, b.bytes = p, bytes
	return p, nil
}

// own returns device memory of bytes (a positive multiple of 4) that the
// caller owns until it gives it back (giveBack): a buffer of that size from
// the pool, else a new one; poisoned as output's are.
func (s *seq) own(bytes int64) devPtr {
	if s.err != nil {
		return 0
	}
	d := s.d
	d.pool.Lock()
	var p devPtr
	if f := d.pool.free[bytes]; len(f) > 0 {
		p, d.pool.free[bytes] = f[len(f)-1], f[:len(f)-1]
	}
	d.pool.Unlock()
	if p == 0 {
		if p, s.err = d.drv.alloc(bytes); s.err != nil {
			s.err = errors.Wrapf(s.err, "cudaops: allocating %d bytes", bytes)
			return 0
		}
	}
	if poison {
		if err := d.drv.memsetD32(p, 0x7FF80000, bytes/4); err != nil {
			d.giveBack(bytes, p)
			s.err = errors.Wrap(err, "cudaops: poisoning an output")
			return 0
		}
	}
	return p
}

// giveBack returns buffers of bytes each that own handed out to the pool;
// any goroutine may call it.
func (d *Device) giveBack(bytes int64, ps ...devPtr) {
	d.pool.Lock()
	defer d.pool.Unlock()
	if d.pool.free == nil {
		d.pool.free = map[int64][]devPtr{}
	}
	for _, p := range ps {
		if p != 0 {
			d.pool.free[bytes] = append(d.pool.free[bytes], p)
		}
	}
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
func upload[T Float](d *Device, slot int, h []T) (devPtr, error) {
	p, err := d.buf(slot, int64(len(h))*sizeOf[T]())
	if err != nil {
		return p, err
	}
	return p, uploadTo(d, p, h)
}

// uploadTo copies h into the device memory at p, which has room for it.
func uploadTo[T Float](d *Device, p devPtr, h []T) error {
	n := int64(len(h)) * sizeOf[T]()
	if n == 0 {
		return nil
	}
	d.hostToDevice.Add(n)
	return errors.Wrap(d.waited(d.copied(copyToDeviceName, func() error { return d.drv.copyToDevice(p, unsafe.Pointer(&h[0]), n) })), "cudaops: copy to device")
}

// output returns slot's buffer for count values of T, poisoned with NaN
// when the tests ask for it (the pattern 0x7FF80000 repeated is a NaN as
// float32 and as float64).
func output[T Float](d *Device, slot int, count int) (devPtr, error) {
	n := int64(count) * sizeOf[T]()
	p, err := d.buf(slot, n)
	if err != nil || !poison || n == 0 {
		return p, err
	}
	return p, errors.Wrap(d.drv.memsetD32(p, 0x7FF80000, n/4), "cudaops: poisoning an output")
}

// download copies len(h) values from p into h.
func download[T Float](d *Device, h []T, p devPtr) error {
	if len(h) == 0 {
		return nil
	}
	n := int64(len(h)) * sizeOf[T]()
	d.deviceToHost.Add(n)
	return errors.Wrap(d.waited(d.copied(copyToHostName, func() error { return d.drv.copyFromDevice(unsafe.Pointer(&h[0]), p, n) })), "cudaops: copy from device")
}

// waited is err of a driver call that waited for every kernel launched
// before it (a copy, a synchronisation), named with those kernels if it
// failed, since a kernel's own failure shows there.
func (d *Device) waited(err error) error {
	if err != nil && len(d.unsynced) > 0 {
		err = errors.Wrapf(err, "after the kernels %s", strings.Join(d.unsynced, ", "))
	}
	d.unsynced = d.unsynced[:0]
	return err
}

// finish waits for the kernels the current call launched after its last
// copy, so that a call returns only once its work is done and reports the
// failures of its own kernels.
func (d *Device) finish() error {
	if len(d.unsynced) == 0 {
		return nil
	}
	return errors.Wrap(d.waited(d.drv.synchronize()), "cudaops: waiting for the device")
}

// launch starts kernel name on a grid of grid blocks of block threads with
// shared bytes of dynamic shared memory. It does not wait for the kernel:
// launches, copies and memsets run in the order they are issued (one
// context, its default stream), a copy waits for every kernel before it,
// and the call's seq waits at its end (Device.run), so successive kernels
// of one call run back to back instead of each waiting for the host. With
// kernel timing on, every launch is waited for (timed). Every argument
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
	for i, a := range args {
		switch v := a.(type) {
		case devPtr:
			vals[i] = uint64(v)
		case int:
			vals[i] = uint64(int64(v))
		case float64:
			vals[i] = math.Float64bits(v)
		default:
			return errors.Errorf("cudaops: kernel %s: argument %d has unsupported type %T", name, i, a)
		}
	}
	d.launches.Add(1)
	run := func() error {
		// Wrapped only on failure: Wrapf's arguments are boxed wherever
		// the call is made, and a step makes a hundred launches.
		if err := f.launch(grid, block, shared, vals); err != nil {
			return errors.Wrapf(err, "cudaops: kernel %s (grid %v, block %d, shared %d B)", name, grid, block, shared)
		}
		return nil
	}
	if d.times != nil {
		return d.timed(name, run)
	}
	if err := run(); err != nil {
		return err
	}
	d.unsynced = append(d.unsynced, name)
	return nil
}

// blocks returns ⌈n/b⌉.
func blocks(n, b int) int { return (n + b - 1) / b }
