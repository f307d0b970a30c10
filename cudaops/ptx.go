package cudaops

import (
	"embed"
	"path"
	"sort"
	"strings"
)

// ptxFiles holds the PTX that scripts/ptx.sh generates from the *.cu files.
//
//go:embed ptx/*.ptx
var ptxFiles embed.FS

// Modules returns the names of the embedded PTX modules (the .cu file names
// without extension), sorted.
func Modules() []string {
	ents, err := ptxFiles.ReadDir("ptx")
	if err != nil {
		return nil // unreachable: the directory is embedded
	}
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".ptx"))
	}
	sort.Strings(names)
	return names
}

// PTX returns the PTX text of module name and whether it exists.
func PTX(name string) (string, bool) {
	b, err := ptxFiles.ReadFile(path.Join("ptx", name+".ptx"))
	if err != nil {
		return "", false
	}
	return string(b), true
}
