package runspec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRunConfigRoundTrip writes run.json with the arrows of the layer
// string readable, reads it back unchanged, and still reads a file written
// with HTML escapes (as before).
func TestRunConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := Presets["demo"]
	if err := SaveConfig(dir, want); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"1/16 -> 8/8 -> 16/4 -> 10"`) {
		t.Errorf("run.json does not hold the layer string as written:\n%s", data)
	}
	got, err := LoadConfig(dir)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, %v; want %+v", got, err, want)
	}
	old := strings.ReplaceAll(string(data), "->", `-\u003e`)
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadConfig(dir); err != nil || got.Layers != want.Layers {
		t.Errorf("escaped run.json: layers %q, %v; want %q", got.Layers, err, want.Layers)
	}
}
