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

// FuzzParseLayout parses arbitrary layer strings: no panic, and a string it
// accepts has blocks and reads back from its String unchanged.
func FuzzParseLayout(f *testing.F) {
	for _, s := range []string{"1/16 -> 8/8 -> 16/4 -> 10", "1/64 → 8/32 → 10", "1/8->4/4->2", " 1 / 8 -> 3 ", "1/64 -> 8 -> 10",
		"", "->", "1/->10", "1/0 -> 10", "1/8 -> 4/4 -> 10/2", "9223372036854775807/1 -> 2", "1/8 ->→ 10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLayout(s)
		if err != nil {
			return
		}
		if len(l.Blocks) == 0 || l.Classes() < 1 {
			t.Fatalf("ParseLayout(%q) = %+v: no blocks or no classes", s, l)
		}
		again, err := ParseLayout(l.String())
		if err != nil || again.String() != l.String() || len(again.Blocks) != len(l.Blocks) {
			t.Fatalf("ParseLayout(%q).String() = %q reads back as %+v, %v", s, l.String(), again, err)
		}
	})
}
