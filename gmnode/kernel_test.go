package gmnode

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/ops/mixture"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

func kernelValues(n *G.Node) []float64 {
	switch v := n.Value().Data().(type) {
	case []float64:
		return v
	case []float32:
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	return nil
}

// TestNewKernelInit checks the statistics of the reference initialisation on
// a 3D kernel of 32·32·5 Gaussians and the exact 2D positions. The bounds
// are four standard errors wide, so a wrong distribution fails while the
// seeded draw passes.
func TestNewKernelInit(t *testing.T) {
	const fo, fi, nk = 32, 32, 5
	g := newGraph()
	k, err := NewKernel(g, fo, fi, nk, 3, 2.5, rand.New(rand.NewPCG(51, 0)), tensor.Float64, "k")
	if err != nil {
		t.Fatal(err)
	}
	l := k.Learnables()
	w, p, a := kernelValues(l[0]), kernelValues(l[1]), kernelValues(l[2])
	n := float64(len(w))
	var mean, sq float64
	for _, v := range w {
		mean += v / n
		sq += v * v / n
	}
	if se := 4 / math.Sqrt(n); math.Abs(mean) > se || math.Abs(math.Sqrt(sq-mean*mean)-1) > se {
		t.Errorf("weights_raw: mean %g, sd %g, want N(0, 1)", mean, math.Sqrt(sq-mean*mean))
	}
	var zz, pm [3]float64
	spheres := 0.0
	for i := range len(w) {
		pos := p[i*3 : i*3+3]
		if i%nk == 0 {
			if pos[0] != 0 || pos[1] != 0 || pos[2] != 0 {
				t.Fatalf("component %d: position %v, want the origin", i, pos)
			}
			continue
		}
		if r := math.Hypot(math.Hypot(pos[0], pos[1]), pos[2]); math.Abs(r-1) > 1e-12 {
			t.Fatalf("component %d: |p| = %g, want 1", i, r)
		}
		spheres++
		for j := range 3 {
			pm[j] += pos[j]
			zz[j] += pos[j] * pos[j]
		}
	}
	for j := range 3 {
		// Uniform on the sphere: E p_j = 0 (sd 1/√3), E p_j² = 1/3 (sd √(4/45)).
		if m := pm[j] / spheres; math.Abs(m) > 4/math.Sqrt(3*spheres) {
			t.Errorf("axis %d: mean position %g, want 0", j, m)
		}
		if m := zz[j] / spheres; math.Abs(m-1.0/3) > 4*math.Sqrt(4.0/45/spheres) {
			t.Errorf("axis %d: mean squared position %g, want 1/3", j, m)
		}
	}
	var offMean, diagMean float64
	for i, v := range a {
		want := 0.0
		if (i%9)%4 == 0 {
			want = 1
			diagMean += (v - 1) / (n * 3)
		} else {
			offMean += v / (n * 6)
		}
		if math.Abs(v-want) > 0.05 {
			t.Fatalf("factor entry %d = %g, want within 0.05 of %g", i, v, want)
		}
	}
	// U(−0.05, 0.05) has sd 0.05/√3.
	if se := 4 * 0.05 / math.Sqrt(3*3*n); math.Abs(diagMean) > se || math.Abs(offMean) > se {
		t.Errorf("factor noise means %g (diagonal), %g (off-diagonal), want 0", diagMean, offMean)
	}
	if got, want := k.ParamCount(), fo*fi*nk*13; got != want {
		t.Errorf("ParamCount %d, want %d", got, want)
	}

	g2 := newGraph()
	k2, err := NewKernel(g2, 2, 3, 5, 2, 2.5, rand.New(rand.NewPCG(52, 0)), tensor.Float64, "k2")
	if err != nil {
		t.Fatal(err)
	}
	p2 := kernelValues(k2.Learnables()[1])
	want := []float64{0, 0, 0, 1, 1, 0, 0, -1, -1, 0}
	for pair := range 6 {
		for j, v := range want {
			if got := p2[pair*10+j]; math.Abs(got-v) > 1e-15 {
				t.Fatalf("2D pair %d: positions %v, want %v", pair, p2[pair*10:pair*10+10], want)
			}
		}
	}
	if got := k2.ParamCount(); got != 2*3*5*7 {
		t.Errorf("2D ParamCount %d, want %d", got, 2*3*5*7)
	}
}

// TestKernelGraph builds two kernels with the same name in one float32 graph,
// runs the assembly and a weight-decay loss with gradients for every
// learnable, and checks names, shapes and the assembled values.
func TestKernelGraph(t *testing.T) {
	g := newGraph()
	rng := rand.New(rand.NewPCG(53, 0))
	const r = 2.5
	k1, err := NewKernel(g, 3, 2, 4, 2, r, rng, tensor.Float32, "conv")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := NewKernel(g, 3, 2, 4, 2, r, rng, tensor.Float32, "conv")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var learn G.Nodes
	for _, k := range []*Kernel{k1, k2} {
		for _, n := range k.Learnables() {
			if names[n.Name()] {
				t.Fatalf("node name %q used twice", n.Name())
			}
			names[n.Name()] = true
			learn = append(learn, n)
		}
	}
	d1, err := k1.WeightDecay()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := k2.WeightDecay()
	if err != nil {
		t.Fatal(err)
	}
	cost := G.Must(G.Add(G.Must(G.Sum(G.Must(G.Add(k1.Node(), k2.Node())))), G.Must(G.Sum(G.Must(G.Add(d1, d2))))))
	if _, err := G.Grad(cost, learn...); err != nil {
		t.Fatal(err)
	}
	runGraph(t, g)
	for _, n := range learn {
		gr, err := n.Grad()
		if err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
		if !gr.Shape().Eq(n.Shape()) {
			t.Errorf("%s: gradient shape %v, want %v", n.Name(), gr.Shape(), n.Shape())
		}
	}
	kv := kernelValues(k1.Node())
	l := mixture.Layout{B: 3, C: 2, N: 4, D: 2}
	if err := mixture.Validate(kv, l); err != nil {
		t.Fatal(err)
	}
	w, p, a := kernelValues(k1.Learnables()[0]), kernelValues(k1.Learnables()[1]), kernelValues(k1.Learnables()[2])
	eps := 0.05
	for i := range w {
		f := a[i*4 : i*4+4]
		for _, v := range []float64{f[0]*f[0] + f[1]*f[1], f[0]*f[2] + f[1]*f[3], f[2]*f[2] + f[3]*f[3]} {
			eps = math.Max(eps, 0.05*math.Abs(v))
		}
	}
	for i := range w {
		g, f := kv[i*7:i*7+7], a[i*4:i*4+4]
		c := (r / 3) * (r / 3)
		want := []float64{w[i] + 0.1, r * p[2*i], r * p[2*i+1],
			c * (f[0]*f[0] + f[1]*f[1] + eps), c * (f[0]*f[2] + f[1]*f[3]),
			c * (f[0]*f[2] + f[1]*f[3]), c * (f[2]*f[2] + f[3]*f[3] + eps)}
		for j := range want {
			if math.Abs(g[j]-want[j]) > 1e-6 {
				t.Fatalf("Gaussian %d: packed %v, want %v", i, g, want)
			}
		}
	}
}

func TestNewKernelBadInput(t *testing.T) {
	g := newGraph()
	rng := rand.New(rand.NewPCG(54, 0))
	cases := []struct {
		name   string
		g      *G.ExprGraph
		fo     int
		d      int
		radius float64
		rng    *rand.Rand
		dtype  tensor.Dtype
		want   string
	}{
		{"nil graph", nil, 1, 2, 1, rng, tensor.Float64, "graph is nil"},
		{"nil rng", g, 1, 2, 1, nil, tensor.Float64, "rng is nil"},
		{"zero channels", g, 0, 2, 1, rng, tensor.Float64, "must be ≥ 1, got 0"},
		{"D = 4", g, 1, 4, 1, rng, tensor.Float64, "dimension must be 2 or 3, got 4"},
		{"negative radius", g, 1, 2, -1, rng, tensor.Float64, "radius must be positive and finite, got -1"},
		{"NaN radius", g, 1, 2, math.NaN(), rng, tensor.Float64, "got NaN"},
		{"int dtype", g, 1, 2, 1, rng, tensor.Int, "dtype must be float32 or float64, got int"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewKernel(c.g, c.fo, 1, 1, c.d, c.radius, c.rng, c.dtype, "bad")
			if err == nil || !strings.Contains(err.Error(), "gm.NewKernel") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one from gm.NewKernel mentioning %q", err, c.want)
			}
		})
	}
}

// TestKernelFloat32Epsilon builds the same float64 kernel with and without
// KernelFloat32Epsilon: the option must reach the kernel's configuration
// and its assembly, and move the diagonal covariance entries only.
func TestKernelFloat32Epsilon(t *testing.T) {
	for _, d := range []int{2, 3} {
		g := newGraph()
		var ks [2]*Kernel
		for i, opts := range [][]KernelOption{nil, {KernelFloat32Epsilon()}} {
			k, err := NewKernel(g, 2, 3, 5, d, 2.5, rand.New(rand.NewPCG(55, 0)), tensor.Float64, "k", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if k.Config().Float32Epsilon != (opts != nil) {
				t.Fatalf("%dD options %d: Config().Float32Epsilon = %v", d, len(opts), k.Config().Float32Epsilon)
			}
			ks[i] = k
		}
		runGraph(t, g)
		plain, f32 := kernelValues(ks[0].Node()), kernelValues(ks[1].Node())
		s := mixture.PackedLen(d)
		moved := 0
		for i := range plain {
			c := i%s - 1 - d
			diag := c >= 0 && c%(d+1) == 0
			if diag && plain[i] != f32[i] {
				moved++
			}
			if !diag && plain[i] != f32[i] {
				t.Fatalf("%dD: packed[%d] is not a diagonal covariance entry but moved from %g to %g", d, i, plain[i], f32[i])
			}
		}
		if want := 2 * 3 * 5 * d; moved != want {
			t.Errorf("%dD: %d diagonal entries moved, want all %d", d, moved, want)
		}
	}
}
