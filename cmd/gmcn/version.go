package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/gmcn-go/gmcn/ops"
)

// versionCmd is `gmcn version`.
type versionCmd struct{}

func (versionCmd) flags(*flagSet)              {}
func (versionCmd) check(map[string]bool) error { return nil }

func (versionCmd) run(context.Context) error {
	fmt.Print(versionText())
	return nil
}

// versionText describes this binary from its build information: the
// module version, the VCS revision, the Go version, whether it was built
// with GOEXPERIMENT=simd (the AVX-512/AVX2 kernels), and the devices of
// the build.
func versionText() string {
	version, revision, experiments := "unknown", "unknown", ""
	goVersion := runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		version, goVersion = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					revision += " (modified)"
				}
			case "GOEXPERIMENT":
				experiments = s.Value
			}
		}
	}
	simd := "no (scalar kernels)"
	if slices.Contains(strings.Split(experiments, ","), "simd") {
		simd = "yes (AVX-512 or AVX2 kernels, as the CPU has)"
	}
	return fmt.Sprintf("gmcn %s\nrevision  %s\ngo        %s %s/%s\nsimd      %s\ndevices   %s\n",
		version, revision, goVersion, runtime.GOOS, runtime.GOARCH, simd, strings.Join(ops.Devices(), ", "))
}
