package mixture

import "github.com/pkg/errors"

// Float is the set of element types every kernel is generic over.
type Float interface{ ~float32 | ~float64 }

// Layout describes a packed batch of mixtures [B, C, N, 1+D+D·D].
type Layout struct {
	B, C, N, D int
}

// PackedLen returns the length of one packed Gaussian for dimension d.
func PackedLen(d int) int { return 1 + d + d*d }

// DimsFromPackedLen returns the spatial dimension D for a packed Gaussian of
// length p, which must be 7 (2D) or 13 (3D).
func DimsFromPackedLen(p int) (int, error) {
	switch p {
	case 7:
		return 2, nil
	case 13:
		return 3, nil
	}
	return 0, errors.Errorf("packed Gaussian length %d is neither 7 (2D) nor 13 (3D)", p)
}

// LayoutOf checks a tensor shape [B, C, N, 1+D+D·D] and returns its layout.
// B, C and N must all be at least 1: an empty batch or a mixture without
// components is an error.
func LayoutOf(shape []int) (Layout, error) {
	if len(shape) != 4 {
		return Layout{}, errors.Errorf("mixture tensor must have rank 4 [B, C, N, 1+D+D·D], got rank %d %v", len(shape), shape)
	}
	d, err := DimsFromPackedLen(shape[3])
	if err != nil {
		return Layout{}, errors.Wrapf(err, "mixture tensor shape %v", shape)
	}
	l := Layout{B: shape[0], C: shape[1], N: shape[2], D: d}
	if l.B < 1 || l.C < 1 {
		return Layout{}, errors.Errorf("mixture tensor shape %v: batch and channel sizes must be ≥ 1", shape)
	}
	if l.N < 1 {
		return Layout{}, errors.Errorf("mixture tensor shape %v: a mixture needs at least one component, got N = %d", shape, l.N)
	}
	return l, nil
}

// Stride returns the packed Gaussian length 1+D+D·D.
func (l Layout) Stride() int { return PackedLen(l.D) }

// Mixtures returns the number of mixtures B·C.
func (l Layout) Mixtures() int { return l.B * l.C }

// Len returns the number of scalars in the packed tensor.
func (l Layout) Len() int { return l.B * l.C * l.N * l.Stride() }

// Shape returns the tensor shape [B, C, N, 1+D+D·D].
func (l Layout) Shape() []int { return []int{l.B, l.C, l.N, l.Stride()} }

// Offset returns the index of component n of mixture (b, c).
func (l Layout) Offset(b, c, n int) int { return ((b*l.C+c)*l.N + n) * l.Stride() }

// Mixture returns the packed components of mixture m = b·C + c.
func Mixture[T Float](data []T, l Layout, m int) []T {
	s := l.N * l.Stride()
	return data[m*s : (m+1)*s : (m+1)*s]
}
