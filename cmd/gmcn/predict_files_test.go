package main

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gmcn-go/gmcn/dataset/mnist"
	"github.com/gmcn-go/gmcn/internal/runtest"
)

// TestPredictSkipsBadFiles runs `gmcn predict` on good, broken, huge and
// inverted images and an IDX file: every good input is classified on
// standard output, each bad one named on standard error (the huge one
// refused before decoding), the inverted one gets the --invert hint, and
// the command exits 1 at the end.
func TestPredictSkipsBadFiles(t *testing.T) {
	r := runtest.MNIST(t)
	dir := t.TempDir()
	digit := func(i int, invert bool) *image.Gray {
		g := image.NewGray(image.Rect(0, 0, mnist.ImageCols, mnist.ImageRows))
		for k, v := range r.Images.Image(i) {
			if invert {
				v = 255 - v
			}
			g.Pix[k] = v
		}
		return g
	}
	writePNG := func(name string, img image.Image) string {
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := writePNG("good.png", digit(0, false))
	inverted := writePNG("inverted.png", digit(1, true))
	broken := filepath.Join(dir, "broken.png")
	os.WriteFile(broken, []byte("not a PNG"), 0o644)
	huge := filepath.Join(dir, "huge.png")
	os.WriteFile(huge, pngHeader(12000, 12000), 0o644)
	idx := filepath.Join(dir, "t10k-images-idx3-ubyte")
	runtest.WriteIDX(t, idx, mnist.Images{N: 2, Rows: mnist.ImageRows, Cols: mnist.ImageCols, Pixels: r.Images.Pixels[:2*mnist.ImageRows*mnist.ImageCols]})

	res := gmcn(t, dir, "predict", "--run", r.Dir, "--top", "1", good, broken, huge, inverted, "missing.png", idx)
	if res.code != 1 {
		t.Errorf("exit status %d, want 1", res.code)
	}
	out := strings.Split(strings.TrimSpace(res.stdout), "\n")
	want := []string{good + ": ", inverted + ": ", idx + "[0]: ", idx + "[1]: "}
	if len(out) != len(want) {
		t.Fatalf("standard output %q, want a line for each of %q", res.stdout, want)
	}
	for i, w := range want {
		if !strings.HasPrefix(out[i], w) {
			t.Errorf("output line %d %q, want it to start %q", i, out[i], w)
		}
	}
	for _, w := range []string{
		"gmcn predict: image " + broken + " (want PNG, JPEG or GIF)",
		"gmcn predict: image " + huge + " is 12000×12000 pixels, more than the 16777216",
		"gmcn predict: " + inverted + " looks dark on light (its border is bright); the models expect a light digit on black: try --invert",
		"gmcn predict: input file missing.png",
		"gmcn predict: 3 of the 6 input files could not be classified (above)",
	} {
		if !strings.Contains(res.stderr, w) {
			t.Errorf("standard error\n%s\nlacks %q", res.stderr, w)
		}
	}
	if strings.Contains(res.stderr, good+" looks dark") {
		t.Errorf("the light-on-dark image was taken for an inverted one:\n%s", res.stderr)
	}
}

// pngHeader returns the signature and IHDR chunk of a w×h 8-bit grey PNG
// without any image data: enough for image.DecodeConfig, not for Decode.
func pngHeader(w, h uint32) []byte {
	var ihdr bytes.Buffer
	ihdr.WriteString("IHDR")
	binary.Write(&ihdr, binary.BigEndian, w)
	binary.Write(&ihdr, binary.BigEndian, h)
	ihdr.Write([]byte{8, 0, 0, 0, 0}) // bit depth, grey, deflate, adaptive filter, no interlace
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	binary.Write(&b, binary.BigEndian, uint32(ihdr.Len()-4))
	b.Write(ihdr.Bytes())
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(ihdr.Bytes()))
	return b.Bytes()
}
