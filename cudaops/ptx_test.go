package cudaops

import (
	"regexp"
	"strings"
	"testing"
)

// TestPTXRegisterResident checks that the O(N²) and O(m·N) kernels, and
// those of ConvFit, the standardisation and MEM, keep their per-thread
// arrays in registers: a kernel with a run-time dimension
// in its loop bounds gets a local-memory depot (spills to device memory,
// about 7× slower for the ReLU fit's backward on an H100, docs/cuda.md),
// which compiling it per dimension removes.
func TestPTXRegisterResident(t *testing.T) {
	entry := regexp.MustCompile(`\.entry (\w+)\(`)
	for _, mod := range []string{"relufit", "evaluate", "convfit", "standardise", "mem"} {
		src, ok := PTX(mod)
		if !ok {
			t.Fatalf("module %s is not embedded", mod)
		}
		// Each entry's body runs from its .entry line to the next one.
		locs := entry.FindAllStringSubmatchIndex(src, -1)
		if len(locs) == 0 {
			t.Fatalf("module %s has no kernels", mod)
		}
		for i, loc := range locs {
			end := len(src)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			name := src[loc[2]:loc[3]]
			if strings.Contains(src[loc[0]:end], "__local_depot") {
				t.Errorf("%s (module %s) uses local memory", name, mod)
			}
		}
	}
}
