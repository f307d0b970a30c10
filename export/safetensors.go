package export

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"

	"github.com/pkg/errors"
)

// Tensor is one named tensor of a safetensors file, with its values in
// row-major order in exactly one of F32 and F64.
type Tensor struct {
	Name  string
	Shape []int
	F32   []float32
	F64   []float64
}

// Safetensors encodes tensors, in the given order, and metadata in the
// safetensors format: an 8-byte little-endian header length, a JSON header
// padded with spaces to a multiple of 8 bytes mapping each name to its dtype
// ("F32" or "F64"), shape and byte range in the data that follows, the
// optional "__metadata__" string map, then the little-endian values, one
// tensor after the other without gaps.
func Safetensors(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	type entry struct {
		Dtype   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets [2]int `json:"data_offsets"`
	}
	header := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var data bytes.Buffer
	for _, t := range tensors {
		if _, dup := header[t.Name]; dup || t.Name == "" || t.Name == "__metadata__" {
			return nil, errors.Errorf("safetensors: tensor name %q is empty, reserved or used twice", t.Name)
		}
		n := 1
		for _, d := range t.Shape {
			if d < 0 {
				return nil, errors.Errorf("safetensors: tensor %s has shape %v", t.Name, t.Shape)
			}
			n *= d
		}
		e := entry{Shape: append([]int{}, t.Shape...)}
		e.Offsets[0] = data.Len()
		switch {
		case t.F32 != nil && t.F64 == nil && len(t.F32) == n:
			e.Dtype = "F32"
			for _, v := range t.F32 {
				binary.Write(&data, binary.LittleEndian, math.Float32bits(v))
			}
		case t.F64 != nil && t.F32 == nil && len(t.F64) == n:
			e.Dtype = "F64"
			for _, v := range t.F64 {
				binary.Write(&data, binary.LittleEndian, math.Float64bits(v))
			}
		default:
			return nil, errors.Errorf("safetensors: tensor %s of shape %v needs %d values in exactly one of F32 (%d) and F64 (%d)", t.Name, t.Shape, n, len(t.F32), len(t.F64))
		}
		e.Offsets[1] = data.Len()
		header[t.Name] = e
	}
	h, err := json.Marshal(header)
	if err != nil {
		return nil, errors.Wrap(err, "safetensors header")
	}
	if r := len(h) % 8; r != 0 {
		h = append(h, bytes.Repeat([]byte{' '}, 8-r)...)
	}
	out := make([]byte, 8, 8+len(h)+data.Len())
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	out = append(out, h...)
	return append(out, data.Bytes()...), nil
}
