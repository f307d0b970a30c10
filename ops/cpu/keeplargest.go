package cpu

import (
	"cmp"
	"slices"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// KeepLargest writes into y (layout l with N = np) the np components of
// every mixture of x (layout l) with the largest weights, largest first; of
// equal weights the earlier component comes first. It is the reduction of
// the reference's fixed_point_and_max, a top-k by weight. The caller
// guarantees 1 ≤ np ≤ l.N and the slice lengths.
func KeepLargest[T Float](y, x []T, l mixture.Layout, np int) {
	ly := mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}
	s := l.Stride()
	idx := make([][]int32, parallel.Workers(l.Mixtures()))
	parallel.ForWorker(l.Mixtures(), func(w, m int) {
		xm, ym := mixture.Mixture(x, l, m), mixture.Mixture(y, ly, m)
		idx[w] = largest(idx[w], xm, l.N, s, np)
		for i, k := range idx[w] {
			copy(ym[i*s:(i+1)*s], xm[int(k)*s:(int(k)+1)*s])
		}
	})
}

// KeepLargestBackward writes ∂L/∂x of KeepLargest into dx: the incoming
// gradient g of every kept component at the place it was taken from, 0 for
// the others.
func KeepLargestBackward[T Float](dx, x, g []T, l mixture.Layout, np int) {
	ly := mixture.Layout{B: l.B, C: l.C, N: np, D: l.D}
	s := l.Stride()
	idx := make([][]int32, parallel.Workers(l.Mixtures()))
	parallel.ForWorker(l.Mixtures(), func(w, m int) {
		xm, dm, gm := mixture.Mixture(x, l, m), mixture.Mixture(dx, l, m), mixture.Mixture(g, ly, m)
		clear(dm)
		idx[w] = largest(idx[w], xm, l.N, s, np)
		for i, k := range idx[w] {
			copy(dm[int(k)*s:(int(k)+1)*s], gm[i*s:(i+1)*s])
		}
	})
}

// largest returns, in buf, the indices of the np largest weights of the n
// packed components of mx, largest first and earlier first on ties.
func largest[T Float](buf []int32, mx []T, n, s, np int) []int32 {
	buf = buf[:0]
	for k := range n {
		buf = append(buf, int32(k))
	}
	slices.SortStableFunc(buf, func(a, b int32) int { return cmp.Compare(mx[int(b)*s], mx[int(a)*s]) })
	return buf[:np]
}
