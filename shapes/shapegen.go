package shapes

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/pkg/errors"

	"github.com/gmcn-go/gmcn/internal/parallel"
)

// GeneratedClasses are the classes of the generated 3D benchmark, in label
// order. It is our own data set, not ModelNet: parametric solids with random
// variation, written in the ModelNet layout so that the real ModelNet code
// path reads it.
var GeneratedClasses = []string{"box", "sphere", "cylinder", "cone", "torus", "pyramid", "table", "mug", "cross", "spring"}

// GenerateShape returns a random instance of class (an index into
// GeneratedClasses) drawn with rng. Each instance varies in its class
// parameters (proportions, thickness, turns) and then gets, in this order,
// a taper and a twist about the up axis (deformation), an anisotropic scale
// (0.7 to 1.3 per axis), vertex noise (σ = 1 % of the size), with
// probability ½ a partial occlusion (the triangles beyond a random plane
// are removed, 10 to 30 % of them), and a random rotation: any angle about
// the up axis (z) and a tilt of up to 15°, as ModelNet shapes are roughly
// upright.
func GenerateShape(class int, rng *rand.Rand) (*Mesh, error) {
	if class < 0 || class >= len(GeneratedClasses) {
		return nil, errors.Errorf("shapegen: class %d, want 0 to %d", class, len(GeneratedClasses)-1)
	}
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	m := &Mesh{}
	switch GeneratedClasses[class] {
	case "box":
		addBox(m, [3]float64{}, [3]float64{u(0.6, 1), u(0.4, 0.8), u(0.3, 0.7)})
	case "sphere":
		addGrid(m, 24, 12, func(a, b float64) [3]float64 { return spherePoint(a, b, 1) })
	case "cylinder":
		r, h := u(0.3, 0.6), u(0.8, 1.2)
		addGrid(m, 24, 6, func(a, b float64) [3]float64 {
			return [3]float64{r * math.Cos(2*math.Pi*a), r * math.Sin(2*math.Pi*a), h * (b - 0.5)}
		})
		addDisc(m, r, h/2, 24)
		addDisc(m, r, -h/2, 24)
	case "cone":
		r, h := u(0.4, 0.7), u(0.8, 1.3)
		addGrid(m, 24, 6, func(a, b float64) [3]float64 {
			return [3]float64{r * (1 - b) * math.Cos(2*math.Pi*a), r * (1 - b) * math.Sin(2*math.Pi*a), h * (b - 0.5)}
		})
		addDisc(m, r, -h/2, 24)
	case "torus":
		big, small := 0.7, u(0.15, 0.3)
		addGrid(m, 32, 12, func(a, b float64) [3]float64 {
			p, q := 2*math.Pi*a, 2*math.Pi*b
			return [3]float64{(big + small*math.Cos(q)) * math.Cos(p), (big + small*math.Cos(q)) * math.Sin(p), small * math.Sin(q)}
		})
	case "pyramid":
		s, h := u(0.5, 0.8), u(0.7, 1.2)
		corners := [4][3]float64{{-s, -s, -h / 2}, {s, -s, -h / 2}, {s, s, -h / 2}, {-s, s, -h / 2}}
		apex := [3]float64{0, 0, h / 2}
		for i := range 4 {
			addTriangle(m, corners[i], corners[(i+1)%4], apex)
		}
		addTriangle(m, corners[0], corners[2], corners[1])
		addTriangle(m, corners[0], corners[3], corners[2])
	case "table":
		w, d, t, leg := u(0.7, 1), u(0.4, 0.7), u(0.04, 0.1), u(0.04, 0.09)
		addBox(m, [3]float64{0, 0, 0.4}, [3]float64{w, d, t})
		for _, sx := range []float64{-1, 1} {
			for _, sy := range []float64{-1, 1} {
				addBox(m, [3]float64{sx * (w - leg), sy * (d - leg), -0.1}, [3]float64{leg, leg, 0.5})
			}
		}
	case "mug":
		r, h := u(0.35, 0.5), u(0.7, 1.0)
		addGrid(m, 24, 6, func(a, b float64) [3]float64 {
			return [3]float64{r * math.Cos(2*math.Pi*a), r * math.Sin(2*math.Pi*a), h * (b - 0.5)}
		})
		addDisc(m, r, -h/2, 24)
		hr, ht := h*u(0.25, 0.35), u(0.04, 0.08)
		addGrid(m, 12, 8, func(a, b float64) [3]float64 {
			p, q := math.Pi*(a-0.5), 2*math.Pi*b
			c := hr + ht*math.Cos(q)
			return [3]float64{r + c*math.Cos(p), ht * math.Sin(q), c * math.Sin(p)}
		})
	case "cross":
		a, t := u(0.7, 1), u(0.12, 0.25)
		addBox(m, [3]float64{}, [3]float64{a, t, t})
		addBox(m, [3]float64{}, [3]float64{t, a, t})
		addBox(m, [3]float64{}, [3]float64{t, t, a})
	case "spring":
		turns, coil, wire := u(2, 4), u(0.4, 0.6), u(0.06, 0.12)
		h := u(0.8, 1.4)
		addGrid(m, int(24*turns), 8, func(a, b float64) [3]float64 {
			p, q := 2*math.Pi*turns*a, 2*math.Pi*b
			c := coil + wire*math.Cos(q)
			return [3]float64{c * math.Cos(p), c * math.Sin(p), h*(a-0.5) + wire*math.Sin(q)}
		})
	}
	vary(m, rng)
	return m, nil
}

// vary applies the random taper, twist, scale, noise, occlusion and
// rotation of GenerateShape.
func vary(m *Mesh, rng *rand.Rand) {
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	taper, twist := u(-0.3, 0.3), u(-0.6, 0.6)
	scale := [3]float64{u(0.7, 1.3), u(0.7, 1.3), u(0.7, 1.3)}
	for i := 0; i < len(m.Vertices); i += 3 {
		v := m.Vertices[i : i+3]
		f := 1 + taper*v[2]
		s, c := math.Sincos(twist * v[2])
		x, y := f*v[0], f*v[1]
		v[0], v[1] = c*x-s*y, s*x+c*y
		for j := range 3 {
			v[j] = v[j]*scale[j] + 0.01*rng.NormFloat64()
		}
	}
	if rng.IntN(2) == 0 {
		occlude(m, u(0.1, 0.3), rng)
	}
	yaw, tilt, tiltDir := u(0, 2*math.Pi), u(0, 15*math.Pi/180), u(0, 2*math.Pi)
	rot := mul3(axisRotation([3]float64{math.Cos(tiltDir), math.Sin(tiltDir), 0}, tilt), axisRotation([3]float64{0, 0, 1}, yaw))
	for i := 0; i < len(m.Vertices); i += 3 {
		v := m.Vertices[i : i+3]
		x, y, z := v[0], v[1], v[2]
		for j := range 3 {
			v[j] = rot[j][0]*x + rot[j][1]*y + rot[j][2]*z
		}
	}
}

// occlude removes the fraction frac of the triangles that lie furthest along
// a random direction, as a scanner that sees the object partly hidden would.
func occlude(m *Mesh, frac float64, rng *rand.Rand) {
	var dir [3]float64
	for j := range dir {
		dir[j] = rng.NormFloat64()
	}
	nt := m.NumTriangles()
	proj := make([]float64, nt)
	for t := range nt {
		for _, i := range m.Triangles[3*t : 3*t+3] {
			v := m.vertex(i)
			proj[t] += dir[0]*v[0] + dir[1]*v[1] + dir[2]*v[2]
		}
	}
	sorted := append([]float64(nil), proj...)
	slices.Sort(sorted)
	cut := sorted[int(float64(nt-1)*(1-frac))]
	kept := m.Triangles[:0]
	for t := range nt {
		if proj[t] <= cut {
			kept = append(kept, m.Triangles[3*t:3*t+3]...)
		}
	}
	m.Triangles = kept
}

func axisRotation(a [3]float64, angle float64) [3][3]float64 {
	n := math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2])
	x, y, z := a[0]/n, a[1]/n, a[2]/n
	s, c := math.Sincos(angle)
	t := 1 - c
	return [3][3]float64{
		{t*x*x + c, t*x*y - s*z, t*x*z + s*y},
		{t*x*y + s*z, t*y*y + c, t*y*z - s*x},
		{t*x*z - s*y, t*y*z + s*x, t*z*z + c},
	}
}

func mul3(a, b [3][3]float64) [3][3]float64 {
	var c [3][3]float64
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				c[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return c
}

func spherePoint(a, b, r float64) [3]float64 {
	p, t := 2*math.Pi*a, math.Pi*b
	return [3]float64{r * math.Sin(t) * math.Cos(p), r * math.Sin(t) * math.Sin(p), r * math.Cos(t)}
}

// addGrid adds the parametric surface f over [0,1]² as an nu×nv grid of
// quads, two triangles each. Seam vertices are duplicated, which is harmless
// for sampling.
func addGrid(m *Mesh, nu, nv int, f func(a, b float64) [3]float64) {
	base := int32(m.NumVertices())
	for i := 0; i <= nu; i++ {
		for j := 0; j <= nv; j++ {
			p := f(float64(i)/float64(nu), float64(j)/float64(nv))
			m.Vertices = append(m.Vertices, p[:]...)
		}
	}
	at := func(i, j int) int32 { return base + int32(i*(nv+1)+j) }
	for i := range nu {
		for j := range nv {
			m.Triangles = append(m.Triangles, at(i, j), at(i+1, j), at(i+1, j+1), at(i, j), at(i+1, j+1), at(i, j+1))
		}
	}
}

// addDisc adds a disc of radius r at height z, in rings so that it deforms
// smoothly.
func addDisc(m *Mesh, r, z float64, n int) {
	addGrid(m, n, 3, func(a, b float64) [3]float64 {
		return [3]float64{r * b * math.Cos(2*math.Pi*a), r * b * math.Sin(2*math.Pi*a), z}
	})
}

// addBox adds an axis-aligned box with centre c and half-sizes h, each face
// a 4×4 grid so that taper and twist bend it.
func addBox(m *Mesh, c, h [3]float64) {
	for axis := range 3 {
		for _, side := range []float64{-1, 1} {
			p, q := (axis+1)%3, (axis+2)%3
			addGrid(m, 4, 4, func(a, b float64) [3]float64 {
				var v [3]float64
				v[axis] = c[axis] + side*h[axis]
				v[p] = c[p] + (2*a-1)*h[p]
				v[q] = c[q] + (2*b-1)*h[q]
				return v
			})
		}
	}
}

func addTriangle(m *Mesh, a, b, c [3]float64) {
	// A 4×4 grid over the triangle (collapsed quads) keeps it deformable.
	addGrid(m, 4, 4, func(s, t float64) [3]float64 {
		var v [3]float64
		for j := range 3 {
			v[j] = (1-s)*a[j] + s*((1-t)*b[j]+t*c[j])
		}
		return v
	})
}

// WriteOFF writes m as an ASCII OFF file to path, coordinates with 6
// significant digits as in ModelNet.
func WriteOFF(path string, m *Mesh) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return errors.Wrap(err, "write off")
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = errors.Wrapf(cerr, "write off: closing %s", path)
		}
	}()
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "OFF\n%d %d 0\n", m.NumVertices(), m.NumTriangles())
	b := make([]byte, 0, 64)
	for i := 0; i < len(m.Vertices); i += 3 {
		b = b[:0]
		for j := range 3 {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendFloat(b, m.Vertices[i+j], 'g', 6, 64)
		}
		b = append(b, '\n')
		w.Write(b)
	}
	for i := 0; i < len(m.Triangles); i += 3 {
		fmt.Fprintf(w, "3 %d %d %d\n", m.Triangles[i], m.Triangles[i+1], m.Triangles[i+2])
	}
	return errors.Wrapf(w.Flush(), "write off: %s", path)
}

// GenerateModelNet writes the generated benchmark into dir in the
// ModelNet10 layout: dir/<class>/train/<class>_0001.off … (nTrain per class)
// and dir/<class>/test/… (nTest per class), numbered on from the training
// shapes as ModelNet does. Shape j of class c (counting training then test
// shapes) is drawn from the random stream PCG(seed, c·2³² + j), so the set
// depends only on the arguments. Files are written in parallel. dir must
// be new or empty, so that old and new shapes never mix.
func GenerateModelNet(dir string, nTrain, nTest int, seed uint64) error {
	if nTrain < 1 || nTest < 1 {
		return errors.Errorf("shapegen: %d training and %d test shapes per class, want ≥ 1 each", nTrain, nTest)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return errors.Errorf("shapegen: %s is not empty (it has %s); write into a new or empty directory, so that old and new shapes do not mix", dir, entries[0].Name())
	}
	per := nTrain + nTest
	for _, c := range GeneratedClasses {
		for _, s := range []string{"train", "test"} {
			if err := os.MkdirAll(filepath.Join(dir, c, s), 0o755); err != nil {
				return errors.Wrap(err, "shapegen")
			}
		}
	}
	var (
		mu       sync.Mutex
		firstErr error
	)
	parallel.For(len(GeneratedClasses)*per, func(i int) {
		c, j := i/per, i%per
		split := "train"
		if j >= nTrain {
			split = "test"
		}
		m, err := GenerateShape(c, rand.New(rand.NewPCG(seed, uint64(c)<<32|uint64(j))))
		if err == nil {
			name := GeneratedClasses[c]
			err = WriteOFF(filepath.Join(dir, name, split, fmt.Sprintf("%s_%04d.off", name, j+1)), m)
		}
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
	})
	return firstErr
}
