package checkpoint

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/train/optim"
	"github.com/gmcn-go/gmcn/train/report"
)

func sampleState() *State {
	return &State{
		ConfigKey: "k", Epoch: 2, Batch: 5, EpochPerm: []int{2, 0, 1}, RNG: []byte{1, 2, 3},
		Names: []string{"conv1/weights_raw"}, Params: [][]float64{{0.5, -1}},
		BNMean: []float64{0.1}, BNVar: []float64{1.2}, CovNorms: [][]float64{{1, 2}},
		Adam:    optim.Adam{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Steps: 7, M: [][]float64{{1}}, V: [][]float64{{2}}},
		Plateau: *optim.NewPlateau(), LR: 1e-3, Partial: EpochSums{Loss: 3, Correct: 4, Count: 5},
		Metrics: []report.EpochMetrics{{Epoch: 1, TrainLoss: 0.3}},
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.gmcn")
	s := sampleState()
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("round trip changed the state:\n got %+v\nwant %+v", got, s)
	}
}

func TestCheckpointCorruption(t *testing.T) {
	data, err := Encode(sampleState())
	if err != nil {
		t.Fatal(err)
	}
	flip := append([]byte(nil), data...)
	flip[len(flip)/2] ^= 0x40
	cases := map[string][]byte{
		"empty":      nil,
		"bad magic":  append([]byte("XXXXXXXX"), data[8:]...),
		"truncated":  data[:len(data)-10],
		"bit flip":   flip,
		"version":    append(append([]byte(magic), 9, 0, 0, 0), data[12:]...),
		"extra byte": append(append([]byte(nil), data...), 0),
	}
	for name, c := range cases {
		if _, err := Decode(c); err == nil {
			t.Errorf("%s: corrupt checkpoint decoded without error", name)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.gmcn")
	if err := atomicfile.Write(path, flip); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error does not name the file: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	data, err := Encode(sampleState())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:20])
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err == nil && s == nil {
			t.Fatal("nil state without error")
		}
	})
}
