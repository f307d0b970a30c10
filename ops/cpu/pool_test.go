package cpu

import (
	"runtime"
	"testing"
)

// TestKeyedPoolKeepsAcrossGC checks that the value last put for a key is
// handed out again after garbage collections, only for its own key, and
// only once.
func TestKeyedPoolKeepsAcrossGC(t *testing.T) {
	var p keyedPool[int, *[]float32]
	a, b := &[]float32{1}, &[]float32{2}
	p.put(1, a)
	p.put(2, b)
	runtime.GC()
	runtime.GC()
	if v, ok := p.get(1); !ok || v != a {
		t.Fatalf("get(1) after two collections = %p, %v, want the value put (%p)", v, ok, a)
	}
	if v, ok := p.get(1); ok && v == a {
		t.Fatalf("get(1) handed out the same value twice")
	}
	if v, ok := p.get(2); !ok || v != b {
		t.Fatalf("get(2) = %p, %v, want the value put for key 2 (%p)", v, ok, b)
	}
	if _, ok := p.get(3); ok {
		t.Fatalf("get(3) found a value for a key never put")
	}
}
