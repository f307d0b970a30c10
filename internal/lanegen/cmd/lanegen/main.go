// Command lanegen writes the eight-lane twin of a sixteen-lane SIMD kernel
// file (package internal/lanegen): lanegen SRC16 DST8, run by go generate
// in ops/cpu.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/internal/lanegen"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: lanegen SRC16.go DST8.go")
		os.Exit(2)
	}
	src, err := os.ReadFile(os.Args[1])
	if err == nil {
		var out []byte
		if out, err = lanegen.Narrow(src, filepath.Base(os.Args[1])); err == nil {
			err = atomicfile.Write(os.Args[2], out)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
