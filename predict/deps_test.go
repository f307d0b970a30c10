package predict

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTrainingLoop keeps inference apart from training: neither predict
// nor export may depend on package train (its subpackages for the
// checkpoint format and the reports are fine).
func TestNoTrainingLoop(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../export").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/gmcn-go/gmcn/train" {
			t.Errorf("predict or export depends on %s (go list -deps)", p)
		}
	}
	if !strings.Contains(string(out), "github.com/gmcn-go/gmcn/runspec") {
		t.Errorf("go list -deps gave no runspec; did it list the right packages?\n%s", out)
	}
}
