package mixture

import "github.com/pkg/errors"

// Gaussian is one unpacked component: its weight (integral), position and
// row-major covariance. It is the convenient form for building inputs and
// inspecting results; kernels work on packed slices.
type Gaussian struct {
	Weight     float64
	Position   []float64
	Covariance []float64
}

// Dims returns the spatial dimension of g.
func (g Gaussian) Dims() int { return len(g.Position) }

// Pack writes the components gs, ordered (b, c, n) with n fastest, into a new
// packed slice of layout l.
func Pack[T Float](l Layout, gs []Gaussian) ([]T, error) {
	if n := l.B * l.C * l.N; len(gs) != n {
		return nil, errors.Errorf("pack: layout %v needs %d Gaussians, got %d", l.Shape(), n, len(gs))
	}
	out := make([]T, l.Len())
	s := l.Stride()
	for i, g := range gs {
		if len(g.Position) != l.D || len(g.Covariance) != l.D*l.D {
			return nil, errors.Errorf("pack: Gaussian %d has %d position and %d covariance values, D = %d needs %d and %d",
				i, len(g.Position), len(g.Covariance), l.D, l.D, l.D*l.D)
		}
		p := out[i*s : (i+1)*s]
		p[0] = T(g.Weight)
		for j, v := range g.Position {
			p[1+j] = T(v)
		}
		for j, v := range g.Covariance {
			p[1+l.D+j] = T(v)
		}
	}
	return out, nil
}

// Unpack returns the components of a packed slice, ordered (b, c, n).
func Unpack[T Float](data []T, l Layout) ([]Gaussian, error) {
	if len(data) != l.Len() {
		return nil, errors.Errorf("unpack: layout %v needs %d values, got %d", l.Shape(), l.Len(), len(data))
	}
	s := l.Stride()
	gs := make([]Gaussian, l.B*l.C*l.N)
	for i := range gs {
		p := data[i*s : (i+1)*s]
		g := Gaussian{Weight: float64(p[0]), Position: make([]float64, l.D), Covariance: make([]float64, l.D*l.D)}
		for j := range g.Position {
			g.Position[j] = float64(p[1+j])
		}
		for j := range g.Covariance {
			g.Covariance[j] = float64(p[1+l.D+j])
		}
		gs[i] = g
	}
	return gs, nil
}
