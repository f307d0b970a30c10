//go:build unix

package cpu

import "syscall"

// evalCPUTime returns the CPU time (user + system, all threads) the process
// has used so far, in seconds, and true. Benchmarks divide work by it
// because on a shared machine the wall time says more about the other jobs
// than about the kernel.
func evalCPUTime() (float64, bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, true
}
