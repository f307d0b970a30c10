package models

import "testing"

func TestParseLayoutModelNet10ParamCount(t *testing.T) {
	l, err := ParseLayout("1/128 → 8/64 → 16/32 → 32/16 → 64/8 → 10")
	if err != nil {
		t.Fatal(err)
	}
	// The paper's count: every 3D kernel Gaussian has 13 parameters, plus the
	// input normalisation's learnable gain.
	if got := l.KernelParams(5, 3) + 1; got != 216841 {
		t.Errorf("ModelNet10 layout: %d parameters, the paper reports 216,841", got)
	}
	if got := l.String(); got != "1/128 → 8/64 → 16/32 → 32/16 → 64/8 → 10" {
		t.Errorf("String() = %q", got)
	}
}

func TestParseLayoutErrors(t *testing.T) {
	for _, s := range []string{"", "10", "1/64", "1 -> 10", "1/64 -> 8 -> 10", "1/64 -> 8/32 -> 10/5", "1/x -> 10", "1/64 -> -3"} {
		if _, err := ParseLayout(s); err == nil {
			t.Errorf("ParseLayout(%q) accepted a malformed layer string", s)
		}
	}
	l, err := ParseLayout("1/64 -> 8/32 -> 16/16 -> 10")
	if err != nil || len(l.Blocks) != 3 || l.Classes() != 10 || l.InputGaussians != 64 {
		t.Errorf("ASCII arrows: %+v, %v", l, err)
	}
}
