//go:build !unix

package cpu

// evalCPUTime reports false: process CPU time is read only on unix.
func evalCPUTime() (float64, bool) { return 0, false }
