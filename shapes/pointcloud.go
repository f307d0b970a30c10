package shapes

import (
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/pkg/errors"
)

// ReadXYZ reads a point cloud in the XYZ/TXT format of the PointNet++
// resampled ModelNet ("x,y,z,nx,ny,nz" per line) or any variant with at
// least three comma- or whitespace-separated numbers per line; columns after
// the third (normals, colours) are ignored but every line must have the same
// number of columns. At most limit points are read (limit ≤ 0: all). name is
// used in errors only, which name the file and line.
func ReadXYZ(r io.Reader, name string, limit int) ([]float32, error) {
	lr := newLineReader(r, name)
	var pts []float32
	cols := -1
	var xyz [3]float64
	for limit <= 0 || len(pts) < 3*limit {
		f, err := lr.scan()
		if err != nil {
			return nil, err
		}
		if f == nil {
			break
		}
		if len(f) == 1 {
			f = strings.Split(f[0], ",")
		} else {
			f = splitXYZFields(f)
		}
		if cols < 0 {
			cols = len(f)
		} else if len(f) != cols {
			return nil, lr.errorf("%d columns, the first line has %d", len(f), cols)
		}
		if err := parseCoords(f, xyz[:]); err != nil {
			return nil, lr.errorf("point %d: %v", len(pts)/3, err)
		}
		for _, v := range xyz {
			if math.Abs(v) > math.MaxFloat32 {
				return nil, lr.errorf("point %d: coordinate %g overflows float32", len(pts)/3, v)
			}
			pts = append(pts, float32(v))
		}
	}
	if len(pts) == 0 {
		return nil, errors.Errorf("%s: no points", name)
	}
	return pts, nil
}

// splitXYZFields splits whitespace-separated fields further at commas, so
// that "1, 2, 3" and "1 2 3" read alike.
func splitXYZFields(f []string) []string {
	var out []string
	for _, s := range f {
		for _, p := range strings.Split(s, ",") {
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// LoadXYZ reads the point cloud file at path (see ReadXYZ).
func LoadXYZ(path string, limit int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Wrap(err, "point cloud")
	}
	defer f.Close()
	return ReadXYZ(f, path, limit)
}

// Sampler draws points uniformly from the surface of a mesh: a triangle with
// probability proportional to its area, then a uniform point in it.
type Sampler struct {
	m   *Mesh
	cdf []float64 // cumulative triangle areas
}

// NewSampler prepares area-weighted sampling of m. A mesh without any
// triangle of positive area cannot be sampled and is an error.
func NewSampler(m *Mesh) (*Sampler, error) {
	s := &Sampler{m: m, cdf: make([]float64, m.NumTriangles())}
	total := 0.0
	for t := range s.cdf {
		total += triangleArea(m, t)
		s.cdf[t] = total
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, errors.Errorf("sample surface: total area %g of %d triangles, want finite > 0", total, m.NumTriangles())
	}
	return s, nil
}

func triangleArea(m *Mesh, t int) float64 {
	a, b, c := m.vertex(m.Triangles[3*t]), m.vertex(m.Triangles[3*t+1]), m.vertex(m.Triangles[3*t+2])
	u := [3]float64{b[0] - a[0], b[1] - a[1], b[2] - a[2]}
	v := [3]float64{c[0] - a[0], c[1] - a[1], c[2] - a[2]}
	x, y, z := u[1]*v[2]-u[2]*v[1], u[2]*v[0]-u[0]*v[2], u[0]*v[1]-u[1]*v[0]
	return 0.5 * math.Sqrt(x*x+y*y+z*z)
}

func (m *Mesh) vertex(i int32) []float64 { return m.Vertices[3*i : 3*i+3] }

// Sample appends n surface points to dst and returns it. With r1, r2 ~ U[0,1)
// the point (1−√r1)·a + √r1(1−r2)·b + √r1·r2·c is uniform in triangle abc.
func (s *Sampler) Sample(dst []float32, n int, rng *rand.Rand) []float32 {
	total := s.cdf[len(s.cdf)-1]
	for range n {
		t, _ := slices.BinarySearch(s.cdf, rng.Float64()*total)
		// Float64 < 1 keeps the target below total, but a run of zero-area
		// triangles at the end could still be hit by round-off; step back to
		// one with area.
		t = min(t, len(s.cdf)-1)
		for t > 0 && s.cdf[t] == s.cdf[t-1] {
			t--
		}
		a, b, c := s.m.vertex(s.m.Triangles[3*t]), s.m.vertex(s.m.Triangles[3*t+1]), s.m.vertex(s.m.Triangles[3*t+2])
		sr := math.Sqrt(rng.Float64())
		r2 := rng.Float64()
		wa, wb, wc := 1-sr, sr*(1-r2), sr*r2
		for j := range 3 {
			dst = append(dst, float32(wa*a[j]+wb*b[j]+wc*c[j]))
		}
	}
	return dst
}

// SampleSurface returns n points drawn uniformly (area-weighted) from the
// surface of m with rng.
func SampleSurface(m *Mesh, n int, rng *rand.Rand) ([]float32, error) {
	s, err := NewSampler(m)
	if err != nil {
		return nil, err
	}
	return s.Sample(make([]float32, 0, 3*n), n, rng), nil
}

// NormalizeUnitSphere translates pts so that their centroid is the origin and
// scales them so that the farthest point lies at distance 1, in place, as
// PointNet++ does for ModelNet (pc_normalize). A cloud whose points all
// coincide is only translated.
func NormalizeUnitSphere(pts []float32) {
	n := len(pts) / 3
	if n == 0 {
		return
	}
	var c [3]float64
	for i := range n {
		for j := range 3 {
			c[j] += float64(pts[3*i+j])
		}
	}
	for j := range c {
		c[j] /= float64(n)
	}
	r2 := 0.0
	for i := range n {
		d := 0.0
		for j := range 3 {
			v := float64(pts[3*i+j]) - c[j]
			d += v * v
		}
		r2 = max(r2, d)
	}
	scale := 1.0
	if r2 > 0 {
		scale = 1 / math.Sqrt(r2)
	}
	for i := range n {
		for j := range 3 {
			pts[3*i+j] = float32((float64(pts[3*i+j]) - c[j]) * scale)
		}
	}
}
