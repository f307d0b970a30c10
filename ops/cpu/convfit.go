package cpu

import (
	"math"

	"github.com/gmcn-go/gmcn/internal/parallel"
	"github.com/gmcn-go/gmcn/ops/device"
	"github.com/gmcn-go/gmcn/ops/mixture"
)

// ConvFit writes the fused convolution-fitting of the data x (layout lx
// [B, Fi, Ni, ·]) with the kernels k (layout lk [Fo, Fi, Nk, ·]) into y
// (layout device.ConvFitLayout(lx, lk, n)): output mixture (b, o) holds n
// Gaussians that stand for the Nv = Fi·Ni·Nk components of Conv's output
// mixture (b, o), which are never stored.
//
// Per output mixture, the Nv virtual components (Conv's component v, made on
// the fly from one data and one kernel Gaussian) are the leaves of a binary
// radix tree over keys that sort by the sign of the weight first and by the
// Morton code of the position second, so the root separates negative from
// positive weights and every other node is single-signed. Starting from the
// root, the selected node with the largest |Σ w| (the first one on ties) is
// replaced by its two children until n nodes are selected or all are leaves;
// each selected node, in selection order, becomes the moment match of the
// components below it (see convFitMoments). Slots beyond Nv are
// {0, 0, I}. docs/fused.md derives it and says what differs from the
// reference's unevaluated version.
//
// The caller guarantees lx.C == lk.C, lx.D == lk.D, n ≥ 1, Nv < 2³¹ and the
// slice lengths. Work is spread over the B·Fo output mixtures.
func ConvFit[T Float](y, x, k []T, lx, lk mixture.Layout, n int) {
	ly := device.ConvFitLayout(lx, lk, n)
	s := ly.Stride()
	work := make([]*convFit[T], parallel.Workers(ly.Mixtures()))
	parallel.ForWorker(ly.Mixtures(), func(w, m int) {
		if work[w] == nil {
			work[w] = newConvFit(x, k, lx, lk)
		}
		cf := work[w]
		cf.selectNodes(m, n)
		out := mixture.Mixture(y, ly, m)
		for i, node := range cf.sel {
			var mm convFitMoments
			cf.match(&mm, node)
			writeMoments(out[i*s:(i+1)*s], &mm, ly.D)
		}
		padIdentity(ly.D, out[len(cf.sel)*s:])
	})
}

// ConvFitBackward writes ∂L/∂x into dx and ∂L/∂k into dk for ConvFit from
// the incoming gradient g (layout device.ConvFitLayout(lx, lk, n)), with the
// tree and the selection that ConvFit takes for x and k held fixed; a nil
// destination is not computed. Padding slots carry no gradient.
//
// Data mixture (b, c) feeds every output channel and kernel (o, c) every
// batch entry, so ∂L/∂x is spread over the batch entries and ∂L/∂k over the
// output channels: each worker owns its rows and sums them in a fixed order,
// which keeps the result deterministic. The selection is recomputed for
// each destination.
func ConvFitBackward[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, n int) {
	fo := lk.B
	if dx != nil {
		clear(dx)
		convFitBackward(dx, nil, g, x, k, lx, lk, n, lx.B, func(b, o int) int { return b*fo + o })
	}
	if dk != nil {
		clear(dk)
		convFitBackward(nil, dk, g, x, k, lx, lk, n, fo, func(o, b int) int { return b*fo + o })
	}
}

// convFitBackward runs the backward of the output mixtures mix(r, i) for
// every row r < rows (in parallel) and every i (in order), accumulating
// into dx or dk.
func convFitBackward[T Float](dx, dk, g, x, k []T, lx, lk mixture.Layout, n, rows int, mix func(r, i int) int) {
	ly := device.ConvFitLayout(lx, lk, n)
	s := ly.Stride()
	inner := ly.Mixtures() / rows
	work := make([]*convFit[T], parallel.Workers(rows))
	parallel.ForWorker(rows, func(w, r int) {
		if work[w] == nil {
			work[w] = newConvFit(x, k, lx, lk)
			work[w].dx, work[w].dk = dx, dk
		}
		cf := work[w]
		for i := range inner {
			m := mix(r, i)
			cf.selectNodes(m, n)
			gm := mixture.Mixture(g, ly, m)
			for j, node := range cf.sel {
				var mm convFitMoments
				cf.match(&mm, node)
				cf.backward(&mm, node, gm[j*s:(j+1)*s])
			}
		}
	})
}

// convFit is one worker's state for the fused convolution-fitting: the
// operands and, for the current output mixture (b, o), the sorted keys, the
// tree over them and the selected nodes.
type convFit[T Float] struct {
	x, k   []T
	lx, lk mixture.Layout
	nv     int
	b, o   int

	keys, buf []uint64
	// perm[j] is the virtual component of the j-th sorted key.
	perm []int32
	// prefix[j] is the signed weight sum of the first j sorted components,
	// so a node covering [f, l] has mass prefix[l+1] − prefix[f].
	prefix []float64
	tree   lbvh
	sel    []int32

	// dx and dk receive the gradients (nil when not computed); the worker
	// owns the rows it writes.
	dx, dk []T
}

func newConvFit[T Float](x, k []T, lx, lk mixture.Layout) *convFit[T] {
	nv := lx.C * lx.N * lk.N
	inner := max(nv-1, 0)
	links := make([]int32, 4*inner)
	return &convFit[T]{
		x: x, k: k, lx: lx, lk: lk, nv: nv,
		keys: make([]uint64, nv), buf: make([]uint64, nv),
		perm: make([]int32, nv), prefix: make([]float64, nv+1),
		tree: lbvh{
			left: links[:inner], right: links[inner : 2*inner],
			first: links[2*inner : 3*inner], last: links[3*inner:],
		},
	}
}

// component returns the offsets in x and k of the data and kernel Gaussian
// of virtual component v of mixture (b, o): v = i + Ni·(c + Fi·j), as Conv
// orders its output.
func (cf *convFit[T]) component(v int) (xo, ko int) {
	ni, fi := cf.lx.N, cf.lx.C
	i, c, j := v%ni, (v/ni)%fi, v/(ni*fi)
	return cf.lx.Offset(cf.b, c, i), cf.lk.Offset(cf.o, c, j)
}

// selectNodes builds the keys, the tree and the selection of output mixture
// m = b·Fo + o for n output Gaussians.
func (cf *convFit[T]) selectNodes(m, n int) {
	fi, ni, nk, d := cf.lx.C, cf.lx.N, cf.lk.N, cf.lx.D
	cf.b, cf.o = m/cf.lk.B, m%cf.lk.B
	box := cf.bounds()
	v := 0
	for j := range nk {
		for c := range fi {
			kg := cf.k[cf.lk.Offset(cf.o, c, j):]
			xm := cf.x[cf.lx.Offset(cf.b, c, 0):]
			for i := range ni {
				xg := xm[i*cf.lx.Stride():]
				var p [3]float64
				for a := range d {
					p[a] = float64(xg[1+a]) + float64(kg[1+a])
				}
				// The sign of the product, exactly: no underflow to 0.
				var sign uint64
				if (xg[0] > 0 && kg[0] > 0) || (xg[0] < 0 && kg[0] < 0) {
					sign = 1
				}
				cf.keys[v] = sign<<62 | uint64(box.code(p))<<32 | uint64(v)
				v++
			}
		}
	}
	// The keys were made in index order, so the stable radix sort over the
	// sign and Morton bits leaves equal codes in index order.
	sortKeyBits(cf.keys, cf.buf, 32, 63)
	for j, key := range cf.keys {
		cf.perm[j] = int32(key)
		// The sorted position replaces the index in the low bits: keys stay
		// unique, and runs of equal codes split in the middle.
		cf.keys[j] = key&^0xFFFFFFFF | uint64(j)
		xo, ko := cf.component(int(key & 0xFFFFFFFF))
		cf.prefix[j+1] = cf.prefix[j] + float64(cf.x[xo])*float64(cf.k[ko])
	}
	if cf.nv > 1 {
		cf.tree.build(cf.keys)
	}
	// Node 0 is the root: the first internal node, or the only leaf.
	cf.sel = append(cf.sel[:0], 0)
	for len(cf.sel) < n {
		best, bestMass := -1, -1.0
		for i, node := range cf.sel {
			if int(node) >= cf.nv-1 {
				continue // a leaf cannot be split
			}
			f, l := cf.tree.first[node], cf.tree.last[node]
			if mass := math.Abs(cf.prefix[l+1] - cf.prefix[f]); mass > bestMass {
				best, bestMass = i, mass
			}
		}
		if best < 0 {
			break
		}
		node := cf.sel[best]
		cf.sel[best] = cf.tree.left[node]
		cf.sel = append(cf.sel, cf.tree.right[node])
	}
}

// bounds returns the Morton map of the exact bounding box of the virtual
// positions μ_x + μ_k: per input channel the extremes of the sums are the
// sums of the extremes, so the box costs Fi·(Ni + Nk) instead of Nv.
func (cf *convFit[T]) bounds() mortonBox {
	d := cf.lx.D
	var lower, upper [3]float64
	for a := range d {
		lower[a], upper[a] = math.Inf(1), math.Inf(-1)
	}
	for c := range cf.lx.C {
		xl, xu := positionRange(cf.x, cf.lx, cf.b, c)
		kl, ku := positionRange(cf.k, cf.lk, cf.o, c)
		for a := range d {
			lower[a] = math.Min(lower[a], xl[a]+kl[a])
			upper[a] = math.Max(upper[a], xu[a]+ku[a])
		}
	}
	return newMortonBox(d, lower, upper)
}

// positionRange returns the per-axis extremes of the positions of mixture
// (b, c) of data.
func positionRange[T Float](data []T, l mixture.Layout, b, c int) (lower, upper [3]float64) {
	for a := range l.D {
		lower[a], upper[a] = math.Inf(1), math.Inf(-1)
	}
	mx := mixture.Mixture(data, l, b*l.C+c)
	for g := 0; g < len(mx); g += l.Stride() {
		for a := range l.D {
			p := float64(mx[g+1+a])
			lower[a], upper[a] = math.Min(lower[a], p), math.Max(upper[a], p)
		}
	}
	return lower, upper
}

// leaves returns the sorted positions [first, last] below node.
func (cf *convFit[T]) leaves(node int32) (first, last int) {
	if int(node) >= cf.nv-1 {
		j := int(node) - (cf.nv - 1)
		return j, j
	}
	return int(cf.tree.first[node]), int(cf.tree.last[node])
}

// convFitMoments is the moment match of the components below one node:
// their weight sum w, and the mean μ and covariance Σ of the mixture with
// weights |w_v| (or equal weights if all are 0),
//
//	μ = Σ_v a_v μ_v / A,  Σ = Σ_v a_v (Σ_v + (μ_v − μ)(μ_v − μ)ᵀ) / A,
//
// with a_v = |w_v| and A = Σ_v a_v. On a single-signed node this is the
// moment match of the signed mixture; |w| keeps the root of a mixed-signed
// convolution (n = 1) SPD, where Σ w_v Σ_v / Σ w_v need not be.
type convFitMoments struct {
	w, a    float64
	uniform bool
	mu      [3]float64
	cov     [9]float64
}

// gaussian returns the weight, position and covariance of virtual
// component v in float64, and the offsets of its two factors.
func (cf *convFit[T]) gaussian(v int) (w float64, mu [3]float64, cov [9]float64, xo, ko int) {
	d := cf.lx.D
	xo, ko = cf.component(v)
	xg, kg := cf.x[xo:xo+cf.lx.Stride()], cf.k[ko:ko+cf.lx.Stride()]
	w = float64(xg[0]) * float64(kg[0])
	for a := range d {
		mu[a] = float64(xg[1+a]) + float64(kg[1+a])
	}
	for e := range d * d {
		cov[e] = float64(xg[1+d+e]) + float64(kg[1+d+e])
	}
	return w, mu, cov, xo, ko
}

// match computes the moments of node.
func (cf *convFit[T]) match(mm *convFitMoments, node int32) {
	d := cf.lx.D
	first, last := cf.leaves(node)
	*mm = convFitMoments{}
	for j := first; j <= last; j++ {
		w, mu, _, _, _ := cf.gaussian(int(cf.perm[j]))
		mm.w += w
		mm.a += math.Abs(w)
		for a := range d {
			mm.mu[a] += math.Abs(w) * mu[a]
		}
	}
	if mm.a == 0 {
		mm.uniform, mm.a = true, float64(last-first+1)
		for j := first; j <= last; j++ {
			_, mu, _, _, _ := cf.gaussian(int(cf.perm[j]))
			for a := range d {
				mm.mu[a] += mu[a]
			}
		}
	}
	for a := range d {
		mm.mu[a] /= mm.a
	}
	for j := first; j <= last; j++ {
		w, mu, cov, _, _ := cf.gaussian(int(cf.perm[j]))
		av := mm.weight(w)
		for r := range d {
			for c := range d {
				mm.cov[r*d+c] += av * (cov[r*d+c] + (mu[r]-mm.mu[r])*(mu[c]-mm.mu[c]))
			}
		}
	}
	for e := range d * d {
		mm.cov[e] /= mm.a
	}
}

// weight returns a_v for a component of weight w.
func (mm *convFitMoments) weight(w float64) float64 {
	if mm.uniform {
		return 1
	}
	return math.Abs(w)
}

// writeMoments writes the Gaussian {w, μ, Σ} of mm into the packed slot out.
func writeMoments[T Float](out []T, mm *convFitMoments, d int) {
	out[0] = T(mm.w)
	for a := range d {
		out[1+a] = T(mm.mu[a])
	}
	for e := range d * d {
		out[1+d+e] = T(mm.cov[e])
	}
}

// backward adds the gradient of the moment match of node, given the
// gradient g of its packed output slot, to the worker's dx and dk. With
// d_v = μ_v − μ, the moment match has
//
//	∂μ/∂a_v = d_v/A,  ∂Σ/∂a_v = (Σ_v + d_v d_vᵀ − Σ)/A,
//	∂μ/∂μ_v = a_v/A,  ∂Σ/∂μ_v: a_v/A (e_p d_vᵀ + d_v e_pᵀ),  ∂Σ/∂Σ_v = a_v/A,
//
// (μ's own dependence on μ_v drops out of Σ because Σ_v a_v d_v = 0), and
// ∂w/∂w_v = 1, ∂a_v/∂w_v = sign(w_v) (0 for equal weights). The component's
// gradient then flows to its factors as in ConvBackwardData and
// ConvBackwardKernels.
func (cf *convFit[T]) backward(mm *convFitMoments, node int32, g []T) {
	d := cf.lx.D
	gw := float64(g[0])
	var gmu [3]float64
	var gcov, gsym [9]float64
	for a := range d {
		gmu[a] = float64(g[1+a])
	}
	for r := range d {
		for c := range d {
			gcov[r*d+c] = float64(g[1+d+r*d+c])
		}
	}
	for r := range d {
		for c := range d {
			gsym[r*d+c] = gcov[r*d+c] + gcov[c*d+r]
		}
	}
	first, last := cf.leaves(node)
	for j := first; j <= last; j++ {
		w, mu, cov, xo, ko := cf.gaussian(int(cf.perm[j]))
		var dv [3]float64
		for a := range d {
			dv[a] = mu[a] - mm.mu[a]
		}
		gv := gw
		if !mm.uniform && w != 0 {
			var ga float64
			for a := range d {
				ga += gmu[a] * dv[a]
			}
			for r := range d {
				for c := range d {
					ga += gcov[r*d+c] * (cov[r*d+c] + dv[r]*dv[c] - mm.cov[r*d+c])
				}
			}
			if w < 0 {
				ga = -ga
			}
			gv += ga / mm.a
		}
		share := mm.weight(w) / mm.a
		var gp [3]float64
		for r := range d {
			gp[r] = gmu[r]
			for c := range d {
				gp[r] += gsym[r*d+c] * dv[c]
			}
			gp[r] *= share
		}
		for _, f := range [2]struct {
			dst   []T
			at    int
			other T
		}{{cf.dx, xo, cf.k[ko]}, {cf.dk, ko, cf.x[xo]}} {
			if f.dst == nil {
				continue
			}
			dst := f.dst[f.at : f.at+1+d+d*d]
			dst[0] += T(gv * float64(f.other))
			for a := range d {
				dst[1+a] += T(gp[a])
			}
			for e := range d * d {
				dst[1+d+e] += T(share * gcov[e])
			}
		}
	}
}
