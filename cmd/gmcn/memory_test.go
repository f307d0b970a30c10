package main

import "testing"

// TestParseSize checks the sizes --max-memory reads and refuses.
func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"512", 512}, {"20G", 20e9}, {"20GB", 20e9}, {"1.5M", 1.5e6}, {"16GiB", 16 << 30}, {"2Ki", 2048}, {"3T", 3e12},
	} {
		if got, err := parseSize(c.in); err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "lots", "-1G", "NaN", "1e30", "G"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}
