// convfit.cu: gm.ConvFit, the fused convolution-fitting (ops/cpu/convfit.go,
// docs/fused.md). Output mixture m = b·Fo + o stands for the Nv = Fi·Ni·Nk
// virtual components of Conv's output mixture (b, o), component
// v = i + Ni·(c + Fi·j) being w_x·w_k, μ_x + μ_k, Σ_x + Σ_k, which are made
// on the fly and never stored. They are sorted by a key of the weight's sign
// and the Morton code of the position, the selected nodes of the radix tree
// over the sorted keys are split greedily by |Σ w|, and every selected node
// becomes the moment match of the components below it.
//
// One thread block per output mixture (a grid of at most one block per
// mixture, each looping over m += gridDim.x), with per-block scratch: the
// keys (padded to a power of two P for the bitonic sort), the sorted order
// perm, the weight prefix sums, the selected nodes and their masses. The
// scratch sits in shared memory where it fits (the paper's MNIST blocks),
// else in global memory: the sort, the prefix sum and the greedy split are
// chains of dependent accesses, which global memory's latency makes about
// ten times slower. Every decision is the CPU kernel's: the keys are computed with the
// same float64 operations, they are unique (the component index sits in
// the low bits), so any correct sort gives the CPU's order, the prefix sums
// are added in the same sequence, and the greedy split takes the largest
// mass with the lowest slot on ties, as the CPU's first-wins scan does.
//
// Given global arrays for it (non-null sperm), the forward also writes each
// mixture's selection: its sorted order (Nv), the selected nodes' bounds
// (2n) and their count; the backward given them reads the selection there
// instead of making it again (cf_saved).
#include "gm.cuh"

// CfShape holds the sizes of one call and where output mixture m's factors
// are. The dimension is a template parameter so that the loops over the
// small per-component arrays unroll and those arrays stay in registers.
template <int D> struct CfShape {
	static constexpr ll d = D, s = 1 + D + D * D;
	ll fi, ni, nk, fo, nv;
	// xoff and koff return the packed offsets of virtual component v's data
	// and kernel factor in mixture m = b·Fo + o.
	__device__ ll xoff(ll m, ll v) const {
		ll i = v % ni, c = (v / ni) % fi;
		return (((m / fo) * fi + c) * ni + i) * s;
	}
	__device__ ll koff(ll m, ll v) const {
		ll c = (v / ni) % fi, j = v / (ni * fi);
		return (((m % fo) * fi + c) * nk + j) * s;
	}
};

// CfScratch is one block's scratch: P keys, Nv sorted indices, Nv + 1
// prefix sums, n selected nodes (first, last) and their masses, all in
// shared memory where they fit in its 48 KiB, else in global memory; red
// (6·blockDim.x doubles for the bounding box) and cnt are always shared.
struct CfScratch {
	ull *keys;
	int *perm;
	double *prefix;
	int *sel;
	double *mass;
	double *red;
	int *cnt;
};

// cf_scratch returns block blk's scratch: in shared memory if shared (laid
// out as cfSharedBytes in convfit_gmcuda.go says: the keys, whose region
// the bounding box's reduction uses first, prefix, mass, perm, sel, cnt),
// else its part of the global buffers.
__device__ CfScratch cf_scratch(ll shared, ull *keys, int *perm, double *prefix, int *sel, double *mass, ll blk, ll P,
                                ll nv, ll n) {
	CfScratch sc;
	if (shared) {
		unsigned char *p = gm_smem;
		sc.keys = (ull *)p, sc.red = (double *)p;
		p += 8 * max(P, 6 * (ll)blockDim.x);
		sc.prefix = (double *)p, p += 8 * (nv + 1);
		sc.mass = (double *)p, p += 8 * n;
		sc.perm = (int *)p, p += 4 * nv;
		sc.sel = (int *)p, p += 8 * n;
		sc.cnt = (int *)p;
		return sc;
	}
	sc.keys = keys + blk * P, sc.perm = perm + blk * nv, sc.prefix = prefix + blk * (nv + 1);
	sc.sel = sel + blk * 2 * n, sc.mass = mass + blk * n;
	sc.red = (double *)gm_smem, sc.cnt = (int *)(sc.red + 6 * blockDim.x);
	return sc;
}

// cf_priority is the priority of a node of mass w in the greedy split:
// w if positive, else neg·|w| (choose in ops/cpu/convfit.go).
__device__ double cf_priority(double w, double neg) { return w > 0 ? w : -w * neg; }

// cf_select makes the sorted keys, perm and prefix of output mixture m and
// selects at most n nodes, splitting the node of highest cf_priority first,
// into sc.sel; it returns how many, in every thread.
template <typename T, int D>
__device__ int cf_select(const T *x, const T *k, const CfShape<D> &sh, ll m, ll n, double neg, ll P,
                         const CfScratch &sc) {
	int *cnt = sc.cnt;
	const ll tid = threadIdx.x, bd = blockDim.x;
	const ll d = sh.d, s = sh.s, nv = sh.nv;
	// The bounding box of the virtual positions: per input channel the
	// extremes of the sums are the sums of the extremes.
	double lower[3], upper[3];
	for (int a = 0; a < 3; a++) lower[a] = INFINITY, upper[a] = -INFINITY;
	ll b = m / sh.fo, o = m % sh.fo;
	for (ll c = tid; c < sh.fi; c += bd) {
		double xl[3], xu[3], kl[3], ku[3];
		for (int a = 0; a < d; a++) xl[a] = kl[a] = INFINITY, xu[a] = ku[a] = -INFINITY;
		const T *xm = x + (b * sh.fi + c) * sh.ni * s;
		for (ll i = 0; i < sh.ni; i++)
			for (int a = 0; a < d; a++) {
				double p = (double)xm[i * s + 1 + a];
				xl[a] = fmin(xl[a], p), xu[a] = fmax(xu[a], p);
			}
		const T *km = k + (o * sh.fi + c) * sh.nk * s;
		for (ll j = 0; j < sh.nk; j++)
			for (int a = 0; a < d; a++) {
				double p = (double)km[j * s + 1 + a];
				kl[a] = fmin(kl[a], p), ku[a] = fmax(ku[a], p);
			}
		for (int a = 0; a < d; a++) {
			lower[a] = fmin(lower[a], xl[a] + kl[a]);
			upper[a] = fmax(upper[a], xu[a] + ku[a]);
		}
	}
	gm_block_box(lower, upper, sc.red);
	double scale[3];
	gm_box_scales(d, lower, upper, scale);
	// Keys: sign of the product (exactly, no underflow to 0) at bit 62,
	// the Morton code at bits 32..61, the index below.
	for (ll v = tid; v < P; v += bd) {
		if (v >= nv) {
			sc.keys[v] = ~0ull;
			continue;
		}
		const T *xg = x + sh.xoff(m, v), *kg = k + sh.koff(m, v);
		unsigned code = 0;
		for (int a = 0; a < d; a++) code |= gm_morton_cell((double)xg[1 + a] + (double)kg[1 + a], lower[a], scale[a]) << (2 - a);
		ull sign = ((xg[0] > 0 && kg[0] > 0) || (xg[0] < 0 && kg[0] < 0)) ? 1 : 0;
		sc.keys[v] = sign << 62 | (ull)code << 32 | (ull)v;
	}
	__syncthreads();
	gm_block_sort(sc.keys, P);
	// The sorted position replaces the index in the low bits, as on the CPU.
	for (ll j = tid; j < nv; j += bd) {
		ull key = sc.keys[j];
		ll v = (ll)(key & 0xFFFFFFFFull);
		sc.perm[j] = (int)v;
		sc.keys[j] = (key & ~0xFFFFFFFFull) | (ull)j;
		sc.prefix[j + 1] = (double)x[sh.xoff(m, v)] * (double)k[sh.koff(m, v)];
	}
	__syncthreads();
	if (tid == 0) {
		sc.prefix[0] = 0;
		for (ll j = 0; j < nv; j++) sc.prefix[j + 1] = sc.prefix[j] + sc.prefix[j + 1];
	}
	__syncthreads();
	// The greedy split, by the first warp: lanes scan the slots, the warp
	// reduces to the largest mass (lowest slot on ties), lane 0 splits.
	if (tid < 32) {
		if (tid == 0) {
			sc.sel[0] = 0, sc.sel[1] = (int)(nv - 1);
			sc.mass[0] = cf_priority(sc.prefix[nv] - sc.prefix[0], neg);
		}
		int c = 1;
		__syncwarp();
		while (c < n) {
			double best = -1;
			int at = 0x7FFFFFFF;
			for (int i = tid; i < c; i += 32)
				if (sc.sel[2 * i] != sc.sel[2 * i + 1] && sc.mass[i] > best) best = sc.mass[i], at = i;
			for (int h = 16; h > 0; h /= 2) {
				double ob = __shfl_xor_sync(0xffffffffu, best, h);
				int oa = __shfl_xor_sync(0xffffffffu, at, h);
				if (ob > best || (ob == best && oa < at)) best = ob, at = oa;
			}
			if (at == 0x7FFFFFFF) break; // only leaves
			if (tid == 0) {
				ll f = sc.sel[2 * at], l = sc.sel[2 * at + 1];
				ll split = gm_karras_split(sc.keys, f, l);
				sc.sel[2 * at + 1] = (int)split;
				sc.mass[at] = cf_priority(sc.prefix[split + 1] - sc.prefix[f], neg);
				sc.sel[2 * c] = (int)(split + 1), sc.sel[2 * c + 1] = (int)l;
				sc.mass[c] = cf_priority(sc.prefix[l + 1] - sc.prefix[split + 1], neg);
			}
			c++;
			__syncwarp();
		}
		if (tid == 0) *cnt = c;
	}
	__syncthreads();
	int nsel = *cnt;
	__syncthreads(); // cnt is read before the next mixture's selection
	return nsel;
}

// cf_saved writes mixture m's selection (sc's sorted order and nsel node
// bounds) to the global arrays sperm [·, Nv], ssel [·, 2n] and scnt if save,
// else reads it from them into sc and returns its count. Every thread calls
// it; the selection is in sc when it returns.
__device__ int cf_saved(bool save, const CfScratch &sc, ll m, ll nv, ll n, int nsel, int *sperm, int *ssel,
                        int *scnt) {
	const ll tid = threadIdx.x, bd = blockDim.x;
	int *gp = sperm + m * nv, *gs = ssel + m * 2 * n;
	if (!save) nsel = scnt[m];
	for (ll j = tid; j < nv; j += bd)
		if (save)
			gp[j] = sc.perm[j];
		else
			sc.perm[j] = gp[j];
	for (ll j = tid; j < 2 * nsel; j += bd)
		if (save)
			gs[j] = sc.sel[j];
		else
			sc.sel[j] = gs[j];
	if (save && tid == 0) scnt[m] = nsel;
	__syncthreads();
	return nsel;
}

// CfMoments is the moment match of one node (convFitMoments on the CPU):
// the weight sum w, A = Σ|w_v| (or the count, uniform, if that is 0), and
// the |w|-weighted mean and covariance.
struct CfMoments {
	double w, a;
	bool uniform;
	double mu[3], cov[9];
	__device__ double weight(double wv) const { return uniform ? 1 : fabs(wv); }
};

// cf_virtual loads virtual component j (in sorted order) of mixture m in
// float64: w, μ, Σ.
template <typename T, int D>
__device__ void cf_virtual(const T *x, const T *k, const CfShape<D> &sh, ll m, const int *perm, ll j, double *g) {
	const T *xg = x + sh.xoff(m, perm[j]), *kg = k + sh.koff(m, perm[j]);
	g[0] = (double)xg[0] * (double)kg[0];
	for (ll e = 1; e < sh.s; e++) g[e] = (double)xg[e] + (double)kg[e];
}

// cf_group returns how many lanes share a selected node's moment match: a
// power of two from 1 to 32, about the mean node size Nv/n. One thread per
// node (as the CPU sums) leaves the block waiting for the thread of its
// largest node when the nodes are large and few; a warp per node wastes
// most of its lanes when they are small and many.
__device__ __forceinline__ int cf_group(ll nv, ll n) {
	ll mean = nv / (n > 0 ? n : 1);
	int g = 1;
	while (g < 32 && 2 * g <= mean) g *= 2;
	return g;
}

// cf_group_sum returns the sum of v over the g aligned lanes of its group,
// in every lane of it. All 32 lanes of the warp must call it with the same
// g. The xor butterfly adds the same two values in each pair of lanes, so
// every lane gets the bitwise same sum; with g = 1 it is v.
__device__ __forceinline__ double cf_group_sum(double v, int g) {
	for (int h = g / 2; h > 0; h /= 2) v += __shfl_xor_sync(0xffffffffu, v, h);
	return v;
}

// cf_match computes the moments of the sorted components [first, last]
// with a group of g lanes, this one being lane r of it: it sums components
// first + r, first + r + g, …, and the group adds the lanes' sums. Every lane
// of the group gets the moments; with g = 1 they are summed in the CPU's
// order, else they differ from the CPU's by rounding. All 32 lanes of the
// warp call it together (an empty range, first > last, for a lane with no
// node).
template <typename T, int D>
__device__ void cf_match(const T *x, const T *k, const CfShape<D> &sh, ll m, const int *perm, ll first, ll last,
                         CfMoments &mm, int r, int g) {
	double v[1 + D + D * D];
	double w = 0, a = 0, mu[D], cov[D * D];
	for (int e = 0; e < D; e++) mu[e] = 0;
	for (int e = 0; e < D * D; e++) cov[e] = 0;
	for (ll j = first + r; j <= last; j += g) {
		cf_virtual(x, k, sh, m, perm, j, v);
		w += v[0];
		a += fabs(v[0]);
		for (int e = 0; e < D; e++) mu[e] += fabs(v[0]) * v[1 + e];
	}
	mm.w = cf_group_sum(w, g);
	mm.a = cf_group_sum(a, g);
	mm.uniform = mm.a == 0;
	for (int e = 0; e < D; e++) mu[e] = cf_group_sum(mu[e], g);
	// All weights 0: the plain mean of the positions instead.
	if (__any_sync(0xffffffffu, mm.uniform)) {
		double pos[D];
		for (int e = 0; e < D; e++) pos[e] = 0;
		for (ll j = first + r; mm.uniform && j <= last; j += g) {
			cf_virtual(x, k, sh, m, perm, j, v);
			for (int e = 0; e < D; e++) pos[e] += v[1 + e];
		}
		for (int e = 0; e < D; e++) pos[e] = cf_group_sum(pos[e], g);
		if (mm.uniform) {
			mm.a = (double)(last - first + 1);
			for (int e = 0; e < D; e++) mu[e] = pos[e];
		}
	}
	for (int e = 0; e < D; e++) mm.mu[e] = mu[e] / mm.a;
	for (ll j = first + r; j <= last; j += g) {
		cf_virtual(x, k, sh, m, perm, j, v);
		double av = mm.weight(v[0]), dv[D];
		for (int e = 0; e < D; e++) dv[e] = v[1 + e] - mm.mu[e];
		for (int i = 0; i < D; i++)
			for (int c = 0; c < D; c++) cov[i * D + c] += av * (v[1 + D + i * D + c] + dv[i] * dv[c]);
	}
	for (int e = 0; e < D * D; e++) mm.cov[e] = cf_group_sum(cov[e], g) / mm.a;
}

// cf_each_node matches the moments of each of mixture m's nsel selected
// nodes with a group of cf_group lanes and calls f(i, first, last, mm, rank,
// lanes) in the lanes of node i's group (rank: the lane's place in it).
// Every thread takes the same rounds, so that whole warps meet in the group
// sums; a lane left without a node matches an empty range and skips f.
template <typename T, int D, typename F>
__device__ void cf_each_node(const T *x, const T *k, const CfShape<D> &sh, ll m, const CfScratch &sc, ll nsel, ll n,
                             F f) {
	const int lanes = cf_group(sh.nv, n), rank = threadIdx.x % lanes;
	for (ll base = 0; base < nsel; base += blockDim.x / lanes) {
		const ll i = base + threadIdx.x / lanes;
		const bool node = i < nsel;
		const ll first = node ? sc.sel[2 * i] : 1, last = node ? sc.sel[2 * i + 1] : 0;
		CfMoments mm;
		cf_match(x, k, sh, m, sc.perm, first, last, mm, rank, lanes);
		if (node) f(i, first, last, mm, rank, lanes);
	}
}

// gm_convfit writes y [B·Fo, n, S]: the moment match of every selected node
// in selection order, then {0, 0, I} padding.
template <typename T, int D>
__device__ void gm_convfit_d(T *y, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll n, double neg,
                             ll shared, ull *keys, ll P, int *perm, double *prefix, int *sel, double *mass,
                             int *sperm, int *ssel, int *scnt) {
	const CfShape<D> sh{fi, ni, nk, fo, fi * ni * nk};
	const ll d = D;
	const CfScratch sc = cf_scratch(shared, keys, perm, prefix, sel, mass, blockIdx.x, P, sh.nv, n);
	for (ll m = blockIdx.x; m < B * fo; m += gridDim.x) {
		int nsel = cf_select(x, k, sh, m, n, neg, P, sc);
		if (sperm) cf_saved(true, sc, m, sh.nv, n, nsel, sperm, ssel, scnt);
		cf_each_node(x, k, sh, m, sc, nsel, n, [&](ll i, ll, ll, const CfMoments &mm, int r, int g) {
			// Lane r of the group writes the values e ≡ r (mod g); the
			// constant indices keep mm in registers.
			T *out = y + (m * n + i) * sh.s;
			if (r == 0) out[0] = (T)mm.w;
			for (int e = 0; e < D; e++)
				if ((1 + e) % g == r) out[1 + e] = (T)mm.mu[e];
			for (int e = 0; e < D * D; e++)
				if ((1 + D + e) % g == r) out[1 + D + e] = (T)mm.cov[e];
		});
		// A thread per padding component.
		for (ll i = nsel + threadIdx.x; i < n; i += blockDim.x) {
			T *out = y + (m * n + i) * sh.s;
			for (ll e = 0; e < sh.s; e++) out[e] = 0;
			for (ll a = 0; a < d; a++) out[1 + d + a * d + a] = 1;
		}
		__syncthreads(); // the scratch is reused by the next mixture
	}
}
template <typename T>
__device__ void gm_convfit(T *y, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll d, ll n, double neg,
                           ll shared, ull *keys, ll P, int *perm, double *prefix, int *sel, double *mass, int *sperm,
                           int *ssel, int *scnt) {
	GM_BY_DIM(d, gm_convfit_d, y, x, k, B, fi, ni, fo, nk, n, neg, shared, keys, P, perm, prefix, sel, mass, sperm,
	          ssel, scnt);
}
#define GM_CONVFIT_PARAMS(T)                                                                                          \
	(T * y, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll d, ll n, double neg, ll shared, ull *keys,  \
	 ll P, int *perm, double *prefix, int *sel, double *mass, int *sperm, int *ssel, int *scnt)
GM_EXPORT(gm_convfit, GM_CONVFIT_PARAMS,
          (y, x, k, B, fi, ni, fo, nk, d, n, neg, shared, keys, P, perm, prefix, sel, mass, sperm, ssel, scnt))

// gm_convfit_backward writes gv [B·Fo, Nv, S], the gradient of every virtual
// component (in Conv's order) given g = ∂L/∂y, with the selection ConvFit
// makes: the gradient Conv's output would receive, from which
// gm_conv_backward_data and gm_conv_backward_kernels make ∂L/∂x and ∂L/∂k.
// The formulas are those of convFitNodeTerms in ops/cpu/convfit.go. The
// selected nodes partition the sorted components, so every value of gv is
// written once.
template <typename T, int D>
__device__ void gm_convfit_backward_d(T *gv, const T *g, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll n,
                                      double neg, ll shared, ull *keys, ll P, int *perm, double *prefix, int *sel,
                                      double *mass, int *sperm, int *ssel, int *scnt) {
	const CfShape<D> sh{fi, ni, nk, fo, fi * ni * nk};
	const ll d = D;
	const ll s = sh.s;
	const CfScratch sc = cf_scratch(shared, keys, perm, prefix, sel, mass, blockIdx.x, P, sh.nv, n);
	for (ll m = blockIdx.x; m < B * fo; m += gridDim.x) {
		int nsel = sperm ? cf_saved(false, sc, m, sh.nv, n, 0, sperm, ssel, scnt)
		                 : cf_select(x, k, sh, m, n, neg, P, sc);
		// The lanes of a node's group share its components.
		cf_each_node(x, k, sh, m, sc, nsel, n, [&](ll i, ll first, ll last, const CfMoments &mm, int rank, int lanes) {
			const T *gi = g + (m * n + i) * s;
			double gw = (double)gi[0], gmu[3], gcov[9], gsym[9];
			for (ll a = 0; a < d; a++) gmu[a] = (double)gi[1 + a];
			for (ll e = 0; e < d * d; e++) gcov[e] = (double)gi[1 + d + e];
			for (ll r = 0; r < d; r++)
				for (ll c = 0; c < d; c++) gsym[r * d + c] = gcov[r * d + c] + gcov[c * d + r];
			for (ll j = first + rank; j <= last; j += lanes) {
				double v[13], dv[3];
				cf_virtual(x, k, sh, m, sc.perm, j, v);
				for (ll a = 0; a < d; a++) dv[a] = v[1 + a] - mm.mu[a];
				double gwv = gw;
				if (!mm.uniform && v[0] != 0) {
					double ga = 0;
					for (ll a = 0; a < d; a++) ga += gmu[a] * dv[a];
					for (ll r = 0; r < d; r++)
						for (ll c = 0; c < d; c++)
							ga += gcov[r * d + c] * (v[1 + d + r * d + c] + dv[r] * dv[c] - mm.cov[r * d + c]);
					if (v[0] < 0) ga = -ga;
					gwv += ga / mm.a;
				}
				double share = mm.weight(v[0]) / mm.a;
				T *out = gv + (m * sh.nv + sc.perm[j]) * s;
				out[0] = (T)gwv;
				for (ll r = 0; r < d; r++) {
					double p = gmu[r];
					for (ll c = 0; c < d; c++) p += gsym[r * d + c] * dv[c];
					out[1 + r] = (T)(p * share);
				}
				for (ll e = 0; e < d * d; e++) out[1 + d + e] = (T)(share * gcov[e]);
			}
		});
		__syncthreads(); // the scratch is reused by the next mixture
	}
}
template <typename T>
__device__ void gm_convfit_backward(T *gv, const T *g, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll d,
                                    ll n, double neg, ll shared, ull *keys, ll P, int *perm, double *prefix, int *sel,
                                    double *mass, int *sperm, int *ssel, int *scnt) {
	GM_BY_DIM(d, gm_convfit_backward_d, gv, g, x, k, B, fi, ni, fo, nk, n, neg, shared, keys, P, perm, prefix, sel,
	          mass, sperm, ssel, scnt);
}
#define GM_CONVFIT_BW_PARAMS(T)                                                                                       \
	(T * gv, const T *g, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll d, ll n, double neg, ll shared, \
	 ull *keys, ll P, int *perm, double *prefix, int *sel, double *mass, int *sperm, int *ssel, int *scnt)
GM_EXPORT(gm_convfit_backward, GM_CONVFIT_BW_PARAMS,
          (gv, g, x, k, B, fi, ni, fo, nk, d, n, neg, shared, keys, P, perm, prefix, sel, mass, sperm, ssel, scnt))
