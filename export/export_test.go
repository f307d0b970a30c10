package export

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/gmtest"
	"github.com/gmcn-go/gmcn/internal/runtest"
	"github.com/gmcn-go/gmcn/ops/mixture"
	"github.com/gmcn-go/gmcn/predict"
	"github.com/gmcn-go/gmcn/runspec"
	"github.com/gmcn-go/gmcn/train/checkpoint"
)

// stTensor is a tensor as readSafetensors finds it.
type stTensor struct {
	dtype  string
	shape  []int
	values []float64
}

// readSafetensors parses a safetensors file from the format's description
// alone, sharing nothing with the writer, and checks its layout: the header
// length, the space padding to a multiple of 8, and data offsets that tile
// the data exactly, in order, without gaps.
func readSafetensors(t *testing.T, data []byte) (map[string]stTensor, map[string]string) {
	t.Helper()
	if len(data) < 8 {
		t.Fatalf("safetensors: %d bytes", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n%8 != 0 || uint64(len(data)-8) < n {
		t.Fatalf("safetensors: header length %d (file %d bytes), want a multiple of 8 inside the file", n, len(data))
	}
	head, body := data[8:8+n], data[8+n:]
	if trimmed := bytes.TrimRight(head, " "); !json.Valid(trimmed) {
		t.Fatalf("safetensors: header is not JSON padded with spaces: %q", head)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(head, &raw); err != nil {
		t.Fatal(err)
	}
	var meta map[string]string
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			t.Fatalf("safetensors: __metadata__ is not a string map: %v", err)
		}
		delete(raw, "__metadata__")
	}
	out := map[string]stTensor{}
	type span struct {
		name       string
		begin, end int
	}
	var spans []span
	for name, r := range raw {
		var e struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets []int  `json:"data_offsets"`
		}
		if err := json.Unmarshal(r, &e); err != nil || len(e.Offsets) != 2 {
			t.Fatalf("safetensors: tensor %s: entry %s (%v)", name, r, err)
		}
		size := map[string]int{"F32": 4, "F64": 8}[e.Dtype]
		count := 1
		for _, d := range e.Shape {
			count *= d
		}
		b, end := e.Offsets[0], e.Offsets[1]
		if size == 0 || end-b != size*count || b < 0 || end > len(body) {
			t.Fatalf("safetensors: tensor %s: dtype %s, shape %v, offsets %v in %d data bytes", name, e.Dtype, e.Shape, e.Offsets, len(body))
		}
		v := make([]float64, count)
		for i := range v {
			p := body[b+i*size:]
			if size == 4 {
				v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
			} else {
				v[i] = math.Float64frombits(binary.LittleEndian.Uint64(p))
			}
		}
		out[name] = stTensor{e.Dtype, e.Shape, v}
		spans = append(spans, span{name, b, end})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].begin < spans[j].begin })
	at := 0
	for _, s := range spans {
		if s.begin != at {
			t.Fatalf("safetensors: tensor %s starts at byte %d, the previous one ends at %d", s.name, s.begin, at)
		}
		at = s.end
	}
	if at != len(body) {
		t.Fatalf("safetensors: tensors end at byte %d of %d", at, len(body))
	}
	return out, meta
}

// TestExportRoundTrip exports a small trained run and reads everything
// back: the safetensors file against the checkpoint (names, dtypes, shapes,
// values), the kernel PLY files against the model's assembled kernels and
// the input PLY files against the run's fitted test inputs.
func TestExportRoundTrip(t *testing.T) {
	r := runtest.MNIST(t)
	p, err := predict.LoadRun(r.Dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := t.TempDir()
	written, err := Run(p, out, 3)
	if err != nil {
		t.Fatal(err)
	}
	// 1·4 + 4·10 kernel mixtures, 3 inputs and the weights.
	if len(written) != 1+44+3 {
		t.Errorf("%d files written, want 48", len(written))
	}
	data, err := os.ReadFile(filepath.Join(out, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	got, meta := readSafetensors(t, data)
	st, err := checkpoint.Load(filepath.Join(r.Dir, runspec.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"bn_running_mean": st.BNMean, "bn_running_var": st.BNVar}
	for i, n := range st.Names {
		want[n] = st.Params[i]
	}
	for i, c := range st.CovNorms {
		want[fmt.Sprintf("conv%d/running_mean_trace", i+1)] = c
	}
	shapes := map[string][]int{"conv1/weights_raw": {4, 1, 5}, "conv1/positions_raw": {4, 1, 5, 2}, "conv1/covariance_factors": {4, 1, 5, 2, 2},
		"conv2/weights_raw": {10, 4, 5}, "input_gain": {1}, "bn_scale": {1, 10}, "bn_running_var": {10}, "conv2/running_mean_trace": {10}}
	if len(got) != len(want) {
		t.Errorf("%d tensors, want %d", len(got), len(want))
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("tensor %s missing", name)
			continue
		}
		dtype := "F32"
		if strings.HasSuffix(name, "running_mean_trace") {
			dtype = "F64"
		}
		if g.dtype != dtype || !slices.Equal(g.values, w) {
			t.Errorf("tensor %s: dtype %s, values differ from the checkpoint's: %v, want %s", name, g.dtype, !slices.Equal(g.values, w), dtype)
		}
		if s, ok := shapes[name]; ok && !slices.Equal(g.shape, s) {
			t.Errorf("tensor %s: shape %v, want %v", name, g.shape, s)
		}
	}
	var rc runspec.Config
	if err := json.Unmarshal([]byte(meta["run_config"]), &rc); err != nil || rc.Layers != r.Setup.Run.Layers || meta["dtype"] != "float32" {
		t.Errorf("metadata %v: run config %+v (%v)", meta, rc, err)
	}

	k, l, err := p.Model.AssembledKernel(1)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := mixture.LoadPLY(filepath.Join(out, KernelsDir, "conv2_out3_in2.gmm.ply"))
	if err != nil {
		t.Fatal(err)
	}
	first := (3*l.C + 2) * l.N
	wantK, _ := mixture.Unpack(k[first*l.Stride():(first+l.N)*l.Stride()], mixture.Layout{B: 1, C: 1, N: l.N, D: 2})
	if !slicesEqualGaussians(gs, wantK) {
		t.Errorf("kernel file conv2_out3_in2 holds %v, the model %v", gs, wantK)
	}

	in, err := mixture.LoadPLY(filepath.Join(out, InputsDir, fmt.Sprintf("test1_label%d.gma.ply", r.Test.Labels[1])))
	if err != nil {
		t.Fatal(err)
	}
	packed, err := mixture.Pack[float64](mixture.Layout{B: 1, C: 1, N: len(in), D: 2}, in)
	if err != nil {
		t.Fatal(err)
	}
	per := r.Test.Layout.N * r.Test.Layout.Stride()
	gmtest.WantClose(t, "input 1 read back from its .gma.ply", packed, r.Test.Mixtures[per:2*per], 1e-5)
}

func slicesEqualGaussians(a, b []mixture.Gaussian) bool {
	return slices.EqualFunc(a, b, func(x, y mixture.Gaussian) bool {
		return x.Weight == y.Weight && slices.Equal(x.Position, y.Position) && slices.Equal(x.Covariance, y.Covariance)
	})
}

func TestSafetensorsErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		tensors []Tensor
		want    string
	}{
		{"duplicate", []Tensor{{Name: "a", Shape: []int{1}, F32: []float32{1}}, {Name: "a", Shape: []int{1}, F32: []float32{2}}}, `"a"`},
		{"reserved", []Tensor{{Name: "__metadata__", Shape: []int{1}, F32: []float32{1}}}, "reserved"},
		{"count", []Tensor{{Name: "a", Shape: []int{2, 2}, F32: []float32{1}}}, "needs 4 values"},
		{"both", []Tensor{{Name: "a", Shape: []int{1}, F32: []float32{1}, F64: []float64{1}}}, "exactly one"},
		{"shape", []Tensor{{Name: "a", Shape: []int{-1}, F64: []float64{}}}, "shape [-1]"},
	} {
		for _, meta := range []map[string]string{nil, {"m": "x"}} {
			_, err := Safetensors(c.tensors, meta)
			gmtest.WantErr(t, err, c.want)
		}
	}
}

// TestSafetensorsEmptyAndPadding reads back files of zero and several
// tensors without metadata.
func TestSafetensorsEmptyAndPadding(t *testing.T) {
	for _, ts := range [][]Tensor{nil, {{Name: "x", Shape: []int{3}, F64: []float64{1, -2, 3.5}}, {Name: "scalar", Shape: []int{}, F32: []float32{7}}}} {
		data, err := Safetensors(ts, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, meta := readSafetensors(t, data)
		if len(got) != len(ts) || meta != nil {
			t.Errorf("%d tensors and metadata %v read back, want %d and none", len(got), meta, len(ts))
		}
		for _, w := range ts {
			v := w.F64
			if v == nil {
				v = gmtest.To64(w.F32)
			}
			if !slices.Equal(got[w.Name].values, v) {
				t.Errorf("tensor %s: %v, want %v", w.Name, got[w.Name].values, v)
			}
		}
	}
}
