//go:build gmcuda && !gmcudaemu

package cudaops

import (
	"unsafe"

	"github.com/pkg/errors"
	"gorgonia.org/cu"
)

// cuDriver is the CUDA driver API through gorgonia.org/cu.
type cuDriver struct{}

func newDriver() (driver, error) { return cuDriver{}, nil }

func (cuDriver) open(ordinal int) (deviceInfo, error) {
	var info deviceInfo
	n, err := cu.NumDevices()
	if err != nil {
		return info, errors.Wrap(err, "cudaops: counting CUDA devices")
	}
	if ordinal < 0 || ordinal >= n {
		return info, errors.Errorf("cudaops: device %d requested, %d present", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return info, errors.Wrapf(err, "cudaops: device %d", ordinal)
	}
	if info.name, err = dev.Name(); err != nil {
		return info, errors.Wrap(err, "cudaops: device name")
	}
	if info.cc[0], err = dev.Attribute(cu.ComputeCapabilityMajor); err != nil {
		return info, errors.Wrap(err, "cudaops: compute capability")
	}
	if info.cc[1], err = dev.Attribute(cu.ComputeCapabilityMinor); err != nil {
		return info, errors.Wrap(err, "cudaops: compute capability")
	}
	if info.mem, err = dev.TotalMem(); err != nil {
		return info, errors.Wrap(err, "cudaops: device memory")
	}
	if _, err = dev.MakeContext(cu.SchedAuto); err != nil {
		return info, errors.Wrap(err, "cudaops: creating the context")
	}
	return info, nil
}

func (cuDriver) alloc(bytes int64) (devPtr, error) {
	p, err := cu.MemAlloc(bytes)
	return devPtr(p), err
}

func (cuDriver) free(p devPtr) error { return cu.MemFree(cu.DevicePtr(p)) }

func (cuDriver) copyToDevice(dst devPtr, src unsafe.Pointer, bytes int64) error {
	return cu.MemcpyHtoD(cu.DevicePtr(dst), src, bytes)
}

func (cuDriver) copyFromDevice(dst unsafe.Pointer, src devPtr, bytes int64) error {
	return cu.MemcpyDtoH(dst, cu.DevicePtr(src), bytes)
}

func (cuDriver) memsetD32(dst devPtr, v uint32, count int64) error {
	return cu.MemsetD32(cu.DevicePtr(dst), v, count)
}

func (cuDriver) load(name, ptx string, kernels []string) (map[string]kernelFunc, error) {
	mod, err := cu.LoadData(ptx)
	if err != nil {
		return nil, errors.Wrapf(err, "cudaops: loading (JIT-compiling) module %s", name)
	}
	fns := make(map[string]kernelFunc, len(kernels))
	for _, k := range kernels {
		f, err := mod.Function(k)
		if err != nil {
			return nil, errors.Wrapf(err, "cudaops: module %s: kernel %s", name, k)
		}
		fns[k] = cuKernel{f}
	}
	return fns, nil
}

func (cuDriver) synchronize() error { return cu.Synchronize() }

func (cuDriver) newEvent() (event, error) {
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	return cuEvent{ev}, err
}

type cuKernel struct{ f cu.Function }

// launch passes each parameter as a pointer to its 8 bytes, which is how
// cu.Function.Launch copies kernel parameters.
func (k cuKernel) launch(grid [2]int, block, shared int, params []uint64) error {
	ptrs := make([]unsafe.Pointer, len(params))
	for i := range params {
		ptrs[i] = unsafe.Pointer(&params[i])
	}
	return k.f.Launch(grid[0], grid[1], 1, block, 1, 1, shared, cu.NoStream, ptrs)
}

type cuEvent struct{ ev cu.Event }

func (e cuEvent) record() error      { return e.ev.Record(cu.NoStream) }
func (e cuEvent) synchronize() error { return e.ev.Synchronize() }

func (e cuEvent) sinceMs(start event) (float64, error) {
	ms, err := start.(cuEvent).ev.Elapsed(e.ev)
	return float64(ms), err
}
