//go:build gmcuda

package cudaops

import (
	"cmp"
	"slices"
	"time"

	"github.com/pkg/errors"
)

// The names under which KernelTimes reports the copies across the bus.
const (
	copyToDeviceName = "memcpy_HtoD"
	copyToHostName   = "memcpy_DtoH"
)

// KernelTime is what the launches of one kernel (or the copies one way
// across the bus) took while a Device timed them.
type KernelTime struct {
	// Name is the kernel's PTX entry name, or memcpy_HtoD or memcpy_DtoH
	// for the copies to the device and to the host.
	Name string
	// Calls counts the launches or copies.
	Calls int
	// Total is their summed duration: for a kernel measured with CUDA
	// events around its launch, for a copy with the host's clock (the
	// copies are synchronous).
	Total time.Duration
	// Median is the median duration of one call.
	Median time.Duration
}

// Copy reports whether k times the copies one way across the bus rather
// than a kernel.
func (k KernelTime) Copy() bool { return k.Name == copyToDeviceName || k.Name == copyToHostName }

// TimeKernels turns the timing of d's kernel launches and copies on (and
// forgets earlier times) or off. A timed launch waits for its stop event
// besides the kernel, so a timed run is a little slower than an untimed
// one; what it is for is the split of a step's device time among its
// kernels, which the host's profile cannot see.
func (d *Device) TimeKernels(on bool) error {
	return d.do(func() error {
		d.times = nil
		if on {
			d.times = map[string][]time.Duration{}
		}
		return nil
	})
}

// KernelTimes returns the times collected since TimeKernels(true), the
// largest total first (nil when timing is off).
func (d *Device) KernelTimes() []KernelTime {
	var out []KernelTime
	_ = d.do(func() error {
		for name, ts := range d.times {
			kt := KernelTime{Name: name, Calls: len(ts)}
			for _, t := range ts {
				kt.Total += t
			}
			s := slices.Sorted(slices.Values(ts))
			kt.Median = s[len(s)/2]
			out = append(out, kt)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b KernelTime) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// timed runs launch between two recorded events, waits for the second and
// appends the elapsed time to d.times[name]. Called on the Device's thread.
func (d *Device) timed(name string, launch func() error) error {
	if d.events[0] == nil {
		for i := range d.events {
			ev, err := d.drv.newEvent()
			if err != nil {
				return errors.Wrap(err, "cudaops: creating a timing event")
			}
			d.events[i] = ev
		}
	}
	start, stop := d.events[0], d.events[1]
	if err := start.record(); err != nil {
		return errors.Wrap(err, "cudaops: recording an event")
	}
	if err := launch(); err != nil {
		return err
	}
	if err := stop.record(); err != nil {
		return errors.Wrap(err, "cudaops: recording an event")
	}
	if err := stop.synchronize(); err != nil {
		return errors.Wrapf(err, "cudaops: waiting for kernel %s", name)
	}
	ms, err := stop.sinceMs(start)
	if err != nil {
		return errors.Wrap(err, "cudaops: event timing")
	}
	d.times[name] = append(d.times[name], time.Duration(ms*float64(time.Millisecond)))
	return nil
}

// copied runs the copy, timed with the host's clock under name while d
// times its calls. Called on the Device's thread.
func (d *Device) copied(name string, copy func() error) error {
	if d.times == nil {
		return copy()
	}
	t0 := time.Now()
	err := copy()
	d.times[name] = append(d.times[name], time.Since(t0))
	return err
}
