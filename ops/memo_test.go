package ops

import (
	"fmt"
	"github.com/gmcn-go/gmcn/ops/device"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMemoGradMatchesRecompute runs every op that saves state for its grad
// ops with a memo, as in a graph with its gradient: the grad op must return
// bitwise what it returns without one (recomputing), for the forward's input,
// and for another input after that forward (the memo must not hand out
// state saved for a different input).
func TestMemoGradMatchesRecompute(t *testing.T) {
	fake, log := newRecordingDevice()
	useDevice(t, fake)
	for _, c := range deviceCases {
		o0, err := c.op()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := asOp(o0).k64.(saving[float64]); !ok {
			continue
		}
		for _, d := range []int{2, 3} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				t.Run(fmt.Sprintf("%s/%dD/%v", c.name, d, dt), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(d), 5))
					inputs := func() []*tensor.Dense {
						in := c.inputs(rng, d)
						if dt == tensor.Float32 {
							for i := range in {
								in[i] = as32(in[i])
							}
						}
						return in
					}
					x, other := inputs(), inputs()
					o, err := c.op()
					if err != nil {
						t.Fatal(err)
					}
					plain := asOp(o)
					memoised := &op{k32: plain.k32, k64: plain.k64, dev: plain.dev, id: plain.id, memo: &memo{}}
					y, err := memoised.Do(values(x)...)
					if err != nil {
						t.Fatal(err)
					}
					g := convTensor(9, y.Shape()...)
					if dt == tensor.Float32 {
						g = as32(g)
					}
					for i, in := range [][]*tensor.Dense{x, other} {
						yi, err := plain.Do(values(in)...)
						if err != nil {
							t.Fatal(err)
						}
						args := append(values(in), yi, g)
						var wrts []int
						var calls, plainCalls [][]string
						for wrt, ok := range plain.DiffWRT(len(in)) {
							if !ok {
								continue
							}
							log.take()
							want, err := plain.gradOp(wrt).Do(args...)
							if err != nil {
								t.Fatal(err)
							}
							plainCalls = append(plainCalls, log.take())
							got, err := memoised.gradOp(wrt).Do(args...)
							if err != nil {
								t.Fatal(err)
							}
							calls = append(calls, log.take())
							wrts = append(wrts, wrt)
							if !slicesEqual(got.Data(), want.Data()) {
								t.Errorf("inputs %d, grad %d: the grad op with a memo differs from the recomputing one", i, wrt)
							}
						}
						shared := sharedGrads(calls, plainCalls)
						for j, wrt := range wrts {
							if saved := shared || usedSaved(calls[j], plainCalls[j]); saved != (i == 0) {
								t.Errorf("inputs %d, grad %d: the grad op called %v", i, wrt, calls[j])
							}
						}
					}
				})
			}
		}
	}
}

// TestMemoRecall checks that a memo returns the saved state only for inputs
// bitwise equal to the forward's: −0 is not +0, and a copy taken at the
// forward is what counts, not the caller's buffer, which may change.
func TestMemoRecall(t *testing.T) {
	x := []float32{1, 0, 2}
	in := []operand[float32]{{shape: tensor.Shape{3}, data: x}}
	var m memo
	if s := recall(&m, in); s != nil {
		t.Fatalf("empty memo recalled %v", s)
	}
	keep(&m, in, "state")
	if s := recall(&m, in); s != "state" {
		t.Fatalf("recall of the same input = %v, want the state", s)
	}
	x[1] = float32(negZero())
	if s := recall(&m, in); s != nil {
		t.Errorf("recall after 0 → −0 = %v, want nil", s)
	}
	x[1] = 0
	if s := recall(&m, []operand[float64]{{data: []float64{1, 0, 2}}}); s != nil {
		t.Errorf("recall for float64 inputs = %v, want nil", s)
	}
	if s := recall(&m, append(slices.Clone(in), in[0])); s != nil {
		t.Errorf("recall with an extra input = %v, want nil", s)
	}
	if s := recall(&m, in); s != "state" {
		t.Errorf("recall after restoring the input = %v, want the state", s)
	}
}

// releasable is a saved state that counts its releases.
type releasable struct{ released int }

func (r *releasable) Release() { r.released++ }

// TestMemoRelease checks that a state the next forward run replaces is
// released once, by the forward run after that, and only if no grad run was
// using a state of the memo when it was replaced.
func TestMemoRelease(t *testing.T) {
	in := []operand[float32]{{shape: tensor.Shape{1}, data: []float32{1}}}
	var m memo
	a, b, c := new(releasable), new(releasable), new(releasable)
	forward := func(s device.Saved) { m.releaseSpare(); keep(&m, in, s) }
	forward(a)
	forward(b)
	if a.released != 0 {
		t.Fatalf("a released when b replaced it; want it kept until the next forward run")
	}
	if s := recall(&m, in); s != b {
		t.Fatalf("recall = %v, want b", s)
	}
	forward(c) // releases a; a grad run still uses b
	if a.released != 1 {
		t.Errorf("a released %d times by the forward run after its replacement; want 1", a.released)
	}
	m.done()
	forward(c)
	forward("state")
	forward("state")
	if a.released != 1 || b.released != 0 || c.released != 1 {
		t.Errorf("released a, b, c %d, %d, %d times; want 1, 0 (in use when replaced), 1", a.released, b.released, c.released)
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

// TestMemoOnlyWithGradient checks that SymDiff gives a saving op and its
// grad op one shared memo, and that an op without saving gets none.
func TestMemoOnlyWithGradient(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, tensor.Float64, 4, G.WithShape(1, 1, 6, 7), G.WithName("x"))
	relu, conv := asOp(NewReLUFit(testDev, ReLUFitOptions{})), asOp(NewIntegrate(testDev))
	for _, o := range []*op{relu, conv} {
		if o.memo != nil {
			t.Fatalf("%s has a memo before SymDiff", o)
		}
	}
	y, err := G.ApplyOp(relu, x)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := relu.SymDiff(G.Nodes{x}, y, y)
	if err != nil {
		t.Fatal(err)
	}
	if relu.memo == nil || asOp(grads[0].Op()).memo != relu.memo {
		t.Errorf("ReLUFit after SymDiff: memo %p, grad op's %p; want one shared memo", relu.memo, asOp(grads[0].Op()).memo)
	}
	s, err := G.ApplyOp(conv, y)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conv.SymDiff(G.Nodes{y}, s, s); err != nil {
		t.Fatal(err)
	}
	if conv.memo != nil {
		t.Errorf("Integrate got a memo; it saves nothing")
	}
}
