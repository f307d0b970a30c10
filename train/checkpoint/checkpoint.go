package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gmcn-go/gmcn/internal/atomicfile"
	"github.com/gmcn-go/gmcn/train/optim"
	"github.com/gmcn-go/gmcn/train/report"
	"github.com/pkg/errors"
)

// magic opens every checkpoint file; version changes whenever the encoded
// State changes incompatibly.
const (
	magic   = "GMCNCKPT"
	version = 1
)

// State is everything a training run needs to continue exactly where it
// stopped: parameters, optimiser and schedule state, running statistics,
// the RNG and the position inside the current epoch, and the metrics so far.
type State struct {
	// ConfigKey identifies the model and training settings; a checkpoint of
	// another configuration is refused.
	ConfigKey string

	Epoch     int // the epoch in progress (0-based)
	Batch     int // the next batch of that epoch
	EpochPerm []int
	RNG       []byte // the shuffling RNG after drawing EpochPerm

	Names     []string
	Params    [][]float64
	BNMean    []float64
	BNVar     []float64
	CovNorms  [][]float64
	Adam      optim.Adam
	Plateau   optim.Plateau
	LR        float64
	Partial   EpochSums // sums of the epoch in progress
	Metrics   []report.EpochMetrics
	Completed bool
}

// EpochSums accumulates one epoch's training loss, correct predictions and
// sample count, so an interrupted epoch resumes with identical statistics.
type EpochSums struct {
	Loss           float64
	Correct, Count int
	Seconds        float64
}

// Encode returns the file bytes of s: magic, version, payload
// length, the gob payload and its SHA-256.
func Encode(s *State) ([]byte, error) {
	var payload bytes.Buffer
	if err := gob.NewEncoder(&payload).Encode(s); err != nil {
		return nil, errors.Wrap(err, "encoding checkpoint")
	}
	var out bytes.Buffer
	out.WriteString(magic)
	binary.Write(&out, binary.LittleEndian, uint32(version))
	binary.Write(&out, binary.LittleEndian, uint64(payload.Len()))
	out.Write(payload.Bytes())
	sum := sha256.Sum256(payload.Bytes())
	out.Write(sum[:])
	return out.Bytes(), nil
}

// Decode parses file bytes written by Encode. Any damage
// (wrong magic, version, length or checksum, undecodable payload) is an
// error; nothing partial is returned.
func Decode(data []byte) (*State, error) {
	head := len(magic) + 4 + 8
	if len(data) < head+sha256.Size || string(data[:len(magic)]) != magic {
		return nil, errors.New("not a gmcn checkpoint (bad magic or too short)")
	}
	if v := binary.LittleEndian.Uint32(data[len(magic):]); v != version {
		return nil, errors.Errorf("checkpoint version %d, this build reads version %d", v, version)
	}
	n := binary.LittleEndian.Uint64(data[len(magic)+4:])
	if n != uint64(len(data)-head-sha256.Size) {
		return nil, errors.Errorf("checkpoint is truncated or padded: payload length %d, file holds %d", n, len(data)-head-sha256.Size)
	}
	payload := data[head : head+int(n)]
	if sum := sha256.Sum256(payload); !bytes.Equal(sum[:], data[head+int(n):]) {
		return nil, errors.New("checkpoint checksum mismatch: the file is corrupt")
	}
	var s State
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(&s); err != nil {
		return nil, errors.Wrap(err, "decoding checkpoint payload")
	}
	return &s, nil
}

// Save writes s atomically to path.
func Save(path string, s *State) error {
	data, err := Encode(s)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data)
}

// Load reads the checkpoint at path; errors name the file and say
// what to do about it.
func Load(path string) (*State, error) {
	again := fmt.Sprintf("gmcn train --out %s --overwrite starts the run again", filepath.Dir(path))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no checkpoint: its training stopped before the first one, or never ran; %s (%w)", filepath.Dir(path), again, err)
	}
	if err != nil {
		return nil, errors.Wrapf(err, "reading checkpoint %s", path)
	}
	s, err := Decode(data)
	if err != nil {
		return nil, errors.Wrapf(err, "checkpoint %s is unusable (%s)", path, again)
	}
	return s, nil
}
