// treehem.cu: gm.TreeHEM, the TreeHEM reduction (ops/cpu/treehem.go and
// treehem_em.go, docs/treehem.md), forward and backward.
//
// One thread block per mixture (a grid of at most one block per mixture,
// each looping over m += gridDim.x), with its scratch in global memory
// (laid out by hem_scratch; treehem_gmcuda.go sizes it). Per mixture the
// block
//  1. pre-scales the components by s = mean_k tr(Σ_k)/D,
//  2. makes their Morton keys and sorts them (gm_block_sort),
//  3. builds the Karras tree, one internal node per thread,
//  4. lists the internal nodes by height (sortByHeight's grouping; the
//     heights bottom-up, each node made by the second of its children to
//     arrive, then a counting sort),
//  5. fits the nodes of one height at a time, one node per thread, by the
//     2T → T EM step of HemFit,
//  6. selects the output nodes top-down and fits the refit node (one thread),
//  7. writes the selected caches scaled back.
// The backward kernel runs 1–6 again and then pushes the output gradient
// top-down, one height at a time, through every node below a selected one,
// making each fitting node's EM decisions again from the same children (they
// are a function of them) for its reverse pass; last it differentiates the
// pre-scaling. With kept ≠ 0 the scratch is one region per mixture instead
// of one per block, which the forward leaves as the backward needs it (the
// tree, the caches, the selection, s and the block's shared results in a
// header), and a backward given the same scratch skips 1–6: the gm.Block
// op keeps it in device memory it owns from its forward to its backward
// (block_gmcuda.go). The separate op's backward replays, which costs one
// forward.
//
// Every decision is the CPU's: the keys are made with the same float64
// operations (and are unique), the EM step, the filters and the selection
// use the CPU's operations in its order, in T. Only the exponential and the
// logarithm differ (the CPU's float32 ones are polynomials), so float64
// results agree to rounding, and decisions too unless two candidates are
// within rounding of a tie.
#include "gm.cuh"

// The reference's constants (ops/cpu/treehem_em.go).
#define HEM_EPS_SMALL 1e-13
#define HEM_EPS_LARGE 1e-7
#define HEM_KL 0.5
#define HEM_SAMPLES 4
#define HEM_LOG_EPS_SMALL -29.933606208922594 // ln 1e−13
#define HEM_LOG_2PI 1.8378770664093453       // ln 2π as Go's math.Log rounds it

// hem_at_least is max(x, lo) by one comparison, NaN passing through, as
// atLeast on the CPU.
template <typename T> __device__ __forceinline__ T hem_at_least(T x, T lo) { return x < lo ? lo : x; }

// hem_exp is e^x; in float32 an argument above 88 gives +Inf, as hemExp on
// the CPU, so that a likelihood that large makes the result non-finite.
template <typename T> __device__ __forceinline__ T hem_exp(T x) {
	if (sizeof(T) == 4 && x > T(88)) return T(INFINITY);
	return gm_exp(x);
}

template <typename T, int D> __device__ __forceinline__ T hem_det(const T *m) {
	if (D == 2) return m[0] * m[3] - m[1] * m[2];
	return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
}

// HemFit is one EM fit of m ≤ M targets to k < m components (emFit on the
// CPU) with the intermediates its reverse pass needs. It always makes its
// decisions (the initial components and the KL masks): the backward makes
// them again from the same targets instead of storing them.
template <typename T, int D, int M> struct HemFit {
	static constexpr int S = 1 + D + D * D, DD = D * D, P = M * (M - 1) / 2;
	int m, k;
	T sumw, bigW, sumv, bigV;
	// Targets: w, ŵ, ln det Σ, Σ_s q, μ, Σ and their gradients.
	T w[M], what[M], logDet[M], sumq[M], mu[M][D], cov[M][DD];
	T gw[M], gwhat[M], gmu[M][D], gcov[M][DD];
	unsigned mask[M];
	// Components: the target each starts from, Σ'⁻¹, the log normaliser,
	// v̂, π, the result, its gradient and the reverse pass's sums.
	int init[M];
	bool dead[M];
	T inv[M][DD], logNorm[M], vhat[M], pi[M], cw[M], cmu[M][D], ccov[M][DD];
	T cgw[M], cgmu[M][D], cgcov[M][DD];
	T gvhat[M], gsum[M], gat[M][D], gaat[M][DD], gsig[M][DD];
	// Pairs of target i and component s at i·k + s.
	T at[M * M][D], tr[M * M], logp[M * M], q[M * M], r[M * M], beta[M * M], gq[M * M], l[M * M];
	// Kruskal's target pairs.
	T pdist[P];
	unsigned char pa[P], pb[P];

	__device__ void set_target(int i, const T *g) {
		w[i] = g[0];
		for (int a = 0; a < D; a++) mu[i][a] = g[1 + a];
		for (int e = 0; e < DD; e++) cov[i][e] = g[1 + D + e];
	}
	__device__ void output(int s, T *g) const {
		g[0] = cw[s];
		for (int a = 0; a < D; a++) g[1 + a] = cmu[s][a];
		for (int e = 0; e < DD; e++) g[1 + D + e] = ccov[s][e];
	}
	__device__ void set_output_grad(int s, const T *g) {
		cgw[s] = g[0];
		for (int a = 0; a < D; a++) cgmu[s][a] = g[1 + a];
		for (int e = 0; e < DD; e++) cgcov[s][e] = g[1 + D + e];
	}
	__device__ void add_target_grad(int i, T *g) const {
		g[0] += gw[i];
		for (int a = 0; a < D; a++) g[1 + a] += gmu[i][a];
		for (int e = 0; e < DD; e++) g[1 + D + e] += gcov[i][e];
	}

	// fit runs the EM step of the m targets to k components (emFit.fit in
	// record mode); the fitted covariances are left to covariances.
	GM_NOINLINE __device__ void fit() {
		sumw = 0;
		GM_NO_UNROLL for (int i = 0; i < m; i++) sumw += w[i];
		bigW = hem_at_least(sumw, T(HEM_EPS_SMALL));
		GM_NO_UNROLL for (int i = 0; i < m; i++) what[i] = w[i] / bigW;
		initial();
		GM_NO_UNROLL for (int i = 0; i < m; i++) logDet[i] = gm_log(hem_det<T, D>(cov[i]));
		prepare();
		decide_masks();
		forward();
	}

	// initial chooses the targets the components start from: single-linkage
	// clustering on squared distances (+∞ across signs) down to k clusters,
	// the member of largest |w| of each cluster, clusters in order of their
	// smallest member (emFit.initial).
	__device__ void initial() {
		int n = 0;
		GM_NO_UNROLL for (int i = 0; i < m; i++)
			GM_NO_UNROLL for (int j = i + 1; j < m; j++) {
				T dist = T(INFINITY);
				if ((w[i] < 0) == (w[j] < 0)) {
					dist = 0;
					for (int c = 0; c < D; c++) {
						T t = mu[i][c] - mu[j][c];
						dist += t * t;
					}
				}
				int at_ = n; // insertion sort, stable: equal distances stay in (i, j) order
				for (; at_ > 0 && pdist[at_ - 1] > dist; at_--)
					pdist[at_] = pdist[at_ - 1], pa[at_] = pa[at_ - 1], pb[at_] = pb[at_ - 1];
				pdist[at_] = dist, pa[at_] = (unsigned char)i, pb[at_] = (unsigned char)j;
				n++;
			}
		int label[M];
		GM_NO_UNROLL for (int i = 0; i < m; i++) label[i] = i;
		int clusters = m;
		GM_NO_UNROLL for (int p = 0; p < n && clusters != k; p++) {
			int a = label[pa[p]], b = label[pb[p]];
			if (a == b) continue;
			int keep = min(a, b), drop = max(a, b);
			GM_NO_UNROLL for (int i = 0; i < m; i++)
				if (label[i] == drop) label[i] = keep;
			clusters--;
		}
		int s = 0;
		GM_NO_UNROLL for (int c = 0; c < m; c++) {
			if (label[c] != c) continue;
			int best = c;
			GM_NO_UNROLL for (int i = c + 1; i < m; i++)
				if (label[i] == c && gm_abs(w[i]) > gm_abs(w[best])) best = i;
			init[s++] = best;
		}
	}

	// prepare sets v̂, Σ'⁻¹ and the log normaliser of the components, and per
	// pair at = Σ'⁻¹(μ_i − μ'_s), tr(Σ'⁻¹Σ_i), ln(a·b) and ln L (emFit.prepare).
	__device__ void prepare() {
		sumv = 0;
		GM_NO_UNROLL for (int s = 0; s < k; s++) {
			int y = init[s];
			sumv += w[y];
			gm_inv_det(D, cov[y], inv[s]);
			logNorm[s] = T(-0.5) * (T(D) * T(HEM_LOG_2PI) + logDet[y]);
		}
		bigV = hem_at_least(sumv, T(HEM_EPS_SMALL));
		GM_NO_UNROLL for (int s = 0; s < k; s++) vhat[s] = w[init[s]] / bigV;
		GM_NO_UNROLL for (int i = 0; i < m; i++) {
			T aw = T(HEM_SAMPLES) * what[i];
			GM_NO_UNROLL for (int s = 0; s < k; s++) {
				const T *a = inv[s], *y = mu[init[s]];
				T t[D], *o = at[i * k + s], qf = 0, tv = 0;
				for (int c = 0; c < D; c++) t[c] = mu[i][c] - y[c];
				for (int rr = 0; rr < D; rr++) {
					T v = a[rr * D] * t[0];
					for (int c = 1; c < D; c++) v += a[rr * D + c] * t[c];
					o[rr] = v;
				}
				qf = t[0] * o[0];
				for (int c = 1; c < D; c++) qf += t[c] * o[c];
				tv = a[0] * cov[i][0];
				for (int e = 1; e < DD; e++) tv += a[e] * cov[i][(e % D) * D + e / D];
				tr[i * k + s] = tv;
				logp[i * k + s] = logNorm[s] - T(0.5) * qf - T(0.5) * tv;
				l[i * k + s] = aw * hem_at_least(logp[i * k + s], T(HEM_LOG_EPS_SMALL));
			}
		}
	}

	// decide_masks sets the KL masks: target i may go to component s if the
	// signs agree and KL(i‖s) < 0.5, and always to its KL-closest component
	// (KL = 0 across signs, as in the reference).
	__device__ void decide_masks() {
		GM_NO_UNROLL for (int i = 0; i < m; i++) {
			unsigned mk = 0;
			int bestS = 0;
			T bestKL = T(INFINITY);
			GM_NO_UNROLL for (int s = 0; s < k; s++) {
				int y = init[s];
				T kl = 0;
				if ((w[i] < 0) == (w[y] < 0)) {
					T t[3] = {0, 0, 0};
					for (int c = 0; c < D; c++) t[c] = mu[i][c] - mu[y][c];
					T qf = gm_quad(D, inv[s], t);
					kl = T(0.5) * (qf + tr[i * k + s] - T(D) - logDet[i] + logDet[y]);
				}
				if (kl < T(HEM_KL)) mk |= 1u << s;
				if (kl < bestKL) bestS = s, bestKL = kl;
			}
			mask[i] = mk | 1u << bestS;
		}
	}

	// forward is the E- and M-step with the masks (emFit.forward).
	__device__ void forward() {
		GM_NO_UNROLL for (int j = 0; j < m * k; j++) l[j] = hem_exp(l[j]);
		GM_NO_UNROLL for (int s = 0; s < k; s++) pi[s] = 0;
		GM_NO_UNROLL for (int i = 0; i < m; i++) {
			T sum = 0;
			GM_NO_UNROLL for (int s = 0; s < k; s++) {
				T qv = 0;
				if (mask[i] >> s & 1) qv = hem_at_least(vhat[s] * l[i * k + s], T(HEM_EPS_SMALL));
				q[i * k + s] = qv;
				sum += qv;
			}
			sumq[i] = sum;
			GM_NO_UNROLL for (int s = 0; s < k; s++) {
				r[i * k + s] = q[i * k + s] / sum;
				pi[s] += r[i * k + s] * what[i];
			}
		}
		GM_NO_UNROLL for (int s = 0; s < k; s++) {
			T pic = hem_at_least(pi[s], T(HEM_EPS_SMALL));
			T mv[D];
			for (int c = 0; c < D; c++) mv[c] = 0;
			GM_NO_UNROLL for (int i = 0; i < m; i++) {
				T b = r[i * k + s] * what[i] / pic;
				beta[i * k + s] = b;
				for (int c = 0; c < D; c++) mv[c] += b * mu[i][c];
			}
			for (int c = 0; c < D; c++) cmu[s][c] = mv[c];
			cw[s] = pi[s] * bigW;
			dead[s] = pi[s] < T(HEM_EPS_LARGE);
		}
	}

	// covariances computes the fitted Σ_s, I for a dead component.
	GM_NOINLINE __device__ void covariances() {
		GM_NO_UNROLL for (int s = 0; s < k; s++) {
			T *o = ccov[s];
			for (int e = 0; e < DD; e++) o[e] = 0;
			if (dead[s]) {
				for (int j = 0; j < D; j++) o[j * D + j] = 1;
				continue;
			}
			GM_NO_UNROLL for (int i = 0; i < m; i++) {
				T bt = beta[i * k + s], t[D];
				for (int c = 0; c < D; c++) t[c] = mu[i][c] - cmu[s][c];
				for (int rr = 0; rr < D; rr++)
					for (int c = 0; c < D; c++) o[rr * D + c] += bt * (cov[i][rr * D + c] + t[rr] * t[c]);
			}
		}
	}

	// backward turns the gradients of the fitted components into those of
	// the targets, differentiating forward and covariances with the same
	// decisions; active clips pass no gradient (emFit.backward).
	GM_NOINLINE __device__ void backward() {
		GM_NO_UNROLL for (int i = 0; i < m; i++) {
			gw[i] = gwhat[i] = 0;
			for (int c = 0; c < D; c++) gmu[i][c] = 0;
			for (int e = 0; e < DD; e++) gcov[i][e] = 0;
		}
		T gW = 0;
		GM_NO_UNROLL for (int s = 0; s < k; s++) {
			gvhat[s] = gsum[s] = 0;
			for (int c = 0; c < D; c++) gat[s][c] = 0;
			for (int e = 0; e < DD; e++) gaat[s][e] = gsig[s][e] = 0;
			T gbeta[M];
			T gpi = cgw[s] * bigW;
			gW += cgw[s] * pi[s];
			T gm[D];
			for (int c = 0; c < D; c++) gm[c] = cgmu[s][c];
			const T *g = cgcov[s];
			GM_NO_UNROLL for (int i = 0; i < m; i++) gbeta[i] = 0;
			if (!dead[s]) {
				GM_NO_UNROLL for (int i = 0; i < m; i++) {
					T bt = beta[i * k + s], t[D];
					for (int c = 0; c < D; c++) t[c] = mu[i][c] - cmu[s][c];
					T gb = g[0] * (cov[i][0] + t[0] * t[0]);
					for (int e = 1; e < DD; e++) gb += g[e] * (cov[i][e] + t[e / D] * t[e % D]);
					gbeta[i] = gb;
					for (int rr = 0; rr < D; rr++) {
						T v = 0;
						for (int c = 0; c < D; c++) {
							T coef = c == rr ? 2 * g[rr * D + rr] : g[rr * D + c] + g[c * D + rr];
							v = c == 0 ? coef * t[c] : v + coef * t[c];
						}
						T dv = bt * v;
						gmu[i][rr] += dv;
						gm[rr] -= dv;
					}
					for (int e = 0; e < DD; e++) gcov[i][e] += bt * g[e];
				}
			}
			T ipic = T(1) / hem_at_least(pi[s], T(HEM_EPS_SMALL));
			T gpic = 0;
			GM_NO_UNROLL for (int i = 0; i < m; i++) {
				T bt = beta[i * k + s];
				T dot = gm[0] * mu[i][0];
				for (int c = 1; c < D; c++) dot += gm[c] * mu[i][c];
				gbeta[i] += dot;
				for (int c = 0; c < D; c++) gmu[i][c] += bt * gm[c];
				gpic -= gbeta[i] * bt * ipic;
			}
			if (pi[s] > T(HEM_EPS_SMALL)) gpi += gpic;
			GM_NO_UNROLL for (int i = 0; i < m; i++) {
				T grho = gbeta[i] * ipic + gpi;
				gq[i * k + s] = grho * what[i]; // ∂L/∂r for now
				gwhat[i] += grho * r[i * k + s];
			}
		}
		GM_NO_UNROLL for (int i = 0; i < m; i++) {
			T dot = 0;
			GM_NO_UNROLL for (int s = 0; s < k; s++) dot += gq[i * k + s] * r[i * k + s];
			T isumq = T(1) / sumq[i];
			GM_NO_UNROLL for (int s = 0; s < k; s++) gq[i * k + s] = (gq[i * k + s] - dot) * isumq;
			GM_NO_UNROLL for (int s = 0; s < k; s++) {
				int p = i * k + s;
				T lv = l[p];
				if (!(mask[i] >> s & 1) || vhat[s] * lv <= T(HEM_EPS_SMALL)) continue;
				gvhat[s] += gq[p] * lv;
				T gl = gq[p] * vhat[s];
				gwhat[i] += gl * T(HEM_SAMPLES) * lv * hem_at_least(logp[p], T(HEM_LOG_EPS_SMALL));
				if (logp[p] <= T(HEM_LOG_EPS_SMALL)) continue;
				T gg = gl * T(HEM_SAMPLES) * what[i] * lv;
				gsum[s] += gg;
				T h = T(0.5) * gg;
				for (int rr = 0; rr < D; rr++) {
					T gr = gg * at[p][rr];
					gmu[i][rr] -= gr;
					gat[s][rr] += gr;
					for (int c = 0; c < D; c++) gaat[s][rr * D + c] += gr * at[p][c];
				}
				for (int e = 0; e < DD; e++) gsig[s][e] += gg * cov[i][e];
				for (int e = 0; e < DD; e++) gcov[i][e] += -h * inv[s][e];
			}
		}
		T gV = 0, ibigV = T(1) / bigV;
		GM_NO_UNROLL for (int s = 0; s < k; s++) gV -= gvhat[s] * vhat[s] * ibigV;
		GM_NO_UNROLL for (int s = 0; s < k; s++) {
			int y = init[s];
			T gv = gvhat[s] * ibigV;
			if (sumv > T(HEM_EPS_SMALL)) gv += gV;
			gw[y] += gv;
			for (int c = 0; c < D; c++) gmu[y][c] += gat[s][c];
			const T *a = inv[s];
			T aw[DD], awa[DD];
			hem_matmul<T, D>(a, gsig[s], aw);
			hem_matmul<T, D>(aw, a, awa);
			for (int e = 0; e < DD; e++) gcov[y][e] += T(0.5) * (gaat[s][e] - gsum[s] * a[e] + awa[e]);
		}
		T ibigW = T(1) / bigW;
		GM_NO_UNROLL for (int i = 0; i < m; i++) gW -= gwhat[i] * what[i] * ibigW;
		GM_NO_UNROLL for (int i = 0; i < m; i++) {
			gw[i] += gwhat[i] * ibigW;
			if (sumw > T(HEM_EPS_SMALL)) gw[i] += gW;
		}
	}

	// hem_matmul writes the product A B of D×D row-major matrices into c.
	template <typename U, int E> static __device__ void hem_matmul(const U *a, const U *b, U *c) {
		for (int rr = 0; rr < E; rr++)
			for (int cc = 0; cc < E; cc++) {
				U v = a[rr * E] * b[cc];
				for (int j = 1; j < E; j++) v += a[rr * E + j] * b[j * E + cc];
				c[rr * E + cc] = v;
			}
	}
};

// Hem is one block's view of the mixture it reduces: the sizes, the
// scratch (hem_scratch) and the state shared by its threads, in shared
// memory after the bounding box's reduction space.
template <typename T, int D, int TR> struct Hem {
	static constexpr int S = 1 + D + D * D, M = 2 * TR;
	ll n, np;
	bool under;
	ull *keys;
	T *xs, *gxs, *cache, *gcache, *integ, *rcache, *gref;
	int *left, *right, *obj, *order, *lvEnd, *height, *parent, *sel, *active;
	unsigned *node; // entry count | fits << 8 | kept entries << 16, per internal node
	double *red;    // 6·blockDim.x doubles for gm_block_box
	double *hd;     // s, √s, ∂L/∂s, ∂L/∂s/(N·D)
	int *hi;        // largest height, selected count, refit slot, refit count
	double *kept;   // with kept scratch, the mixture's copy of hd[0:2] and hi[0:4]

	__device__ int count(ll c) const { return c >= n - 1 ? 1 : (int)(node[c] & 0xFF); }
	__device__ ll entry(ll c) const { return c >= n - 1 ? ~((ll)obj[c - (n - 1)] * S) : c * TR * S; }
	__device__ T *value(ll loc) const { return loc < 0 ? xs + ~loc : cache + loc; }
	__device__ T *grad(ll loc) const { return loc < 0 ? gxs + ~loc : gcache + loc; }

	// collect lists the kept entries of x's children in loc (as entry says
	// where) and returns how many; with record it decides what is kept
	// (|w| ≥ 1e−7) into keep, else it reads node[x].
	__device__ int collect(ll x, bool record, ll *loc, unsigned &keep) const {
		keep = record ? 0 : node[x] >> 16;
		int m = 0, bit = 0;
		ll ch[2] = {left[x], right[x]};
		for (int j = 0; j < 2; j++) {
			ll e = entry(ch[j]);
			int cnt = count(ch[j]);
			GM_NO_UNROLL for (int i = 0; i < cnt; i++, bit++) {
				ll at = e < 0 ? ~(~e + i * S) : e + i * S;
				if (record && gm_abs(value(at)[0]) >= T(HEM_EPS_LARGE)) keep |= 1u << bit;
				if (keep >> bit & 1) loc[m++] = at;
			}
		}
		return m;
	}

	// fit_into fits the m collected entries to k components into out, or
	// copies them if there are no more than k.
	GM_NOINLINE __device__ void fit_into(HemFit<T, D, M> &f, const ll *loc, int m, int k, T *out) const {
		if (m <= k) {
			GM_NO_UNROLL for (int i = 0; i < m; i++)
				for (int e = 0; e < S; e++) out[i * S + e] = value(loc[i])[e];
			return;
		}
		f.m = m, f.k = k;
		GM_NO_UNROLL for (int i = 0; i < m; i++) f.set_target(i, value(loc[i]));
		f.fit();
		f.covariances();
		GM_NO_UNROLL for (int s = 0; s < k; s++) f.output(s, out + s * S);
	}

	// fit_node makes the cache of internal node x and its |integral| rating.
	GM_NOINLINE __device__ void fit_node(HemFit<T, D, M> &f, ll x) {
		ll loc[M];
		unsigned keep;
		int m = collect(x, true, loc, keep);
		node[x] = (unsigned)min(m, TR) | (m > TR ? 1u : 0u) << 8 | keep << 16;
		fit_into(f, loc, m, TR, cache + x * TR * S);
		integ[x] = integral(left[x]) + integral(right[x]);
	}
	__device__ T integral(ll c) const { return c >= n - 1 ? xs[(ll)obj[c - (n - 1)] * S] : integ[c]; }

	// back_node propagates the gradients g of node x's k entries to its
	// children's: by the EM step's reverse pass where it fitted, else as
	// copies; and marks its internal children active.
	GM_NOINLINE __device__ void back_node(HemFit<T, D, M> &f, ll x, const T *g, int k) {
		ll loc[M];
		unsigned keep;
		int m = collect(x, false, loc, keep);
		if (m <= k) {
			GM_NO_UNROLL for (int i = 0; i < m; i++)
				for (int e = 0; e < S; e++) grad(loc[i])[e] += g[i * S + e];
		} else {
			f.m = m, f.k = k;
			GM_NO_UNROLL for (int i = 0; i < m; i++) f.set_target(i, value(loc[i]));
			f.fit();
			GM_NO_UNROLL for (int s = 0; s < k; s++) f.set_output_grad(s, g + s * S);
			f.backward();
			GM_NO_UNROLL for (int i = 0; i < m; i++) f.add_target_grad(i, grad(loc[i]));
		}
		if (left[x] < n - 1) active[left[x]] = 1;
		if (right[x] < n - 1) active[right[x]] = 1;
	}

	// selected returns slot i's entries and their count: the refit's or
	// the selected node's.
	__device__ const T *selected(int i, int &cnt, T *&g) const {
		const int *h = hi;
		if (i == h[2]) {
			cnt = h[3], g = gref;
			return rcache;
		}
		ll c = sel[i], e = entry(c);
		cnt = count(c);
		g = e < 0 ? gxs + ~e : gcache + e;
		return e < 0 ? xs + ~e : cache + e;
	}
};

// hem_ordered_sum is acc + at(0) + … + at(cnt − 1), added in that order
// (the CPU's), by one thread: eight loads are in flight at a time, where a
// plain loop would wait for each before the next.
template <typename T, typename F> __device__ T hem_ordered_sum(T acc, ll cnt, F at) {
	ll i = 0;
	GM_NO_UNROLL for (; i + 8 <= cnt; i += 8) {
		T v[8];
		for (int j = 0; j < 8; j++) v[j] = at(i + j);
		for (int j = 0; j < 8; j++) acc += v[j];
	}
	GM_NO_UNROLL for (; i < cnt; i++) acc += at(i);
	return acc;
}

// hem_trace_sum is Σ_k tr(Σ_k) over cnt packed Gaussians (traceSum).
template <typename T, int D> __device__ T hem_trace_sum(const T *x, ll cnt) {
	const int S = 1 + D + D * D;
	return hem_ordered_sum(T(0), cnt * D, [&](ll i) { return x[i / D * S + 1 + D + i % D * (D + 1)]; });
}

// hem_scratch lays out part blk of the global scratch (the block's, or with
// kept scratch the mixture's), per bytes each (hemScratch in
// treehem_gmcuda.go sizes it): a header of two doubles and four int32 (kept),
// P keys; the T arrays
// xs, gxs (N·S each), cache, gcache ((N−1)·T·S each), integ (N−1), rcache,
// gref (2T·S each); the int arrays left, right (N−1), obj (N), order (N−1),
// lvEnd (N+1), height and parent (2N−1), sel (Np), active and node (N−1).
template <typename T, int D, int TR>
__device__ void hem_scratch(Hem<T, D, TR> &h, unsigned char *scratch, ll per, ll blk, ll P) {
	const ll n = h.n, S = h.S, M = h.M;
	unsigned char *p = scratch + blk * per;
	h.kept = (double *)p, p += 32;
	h.keys = (ull *)p, p += 8 * P;
	T *t = (T *)p;
	h.xs = t, t += n * S;
	h.gxs = t, t += n * S;
	h.cache = t, t += (n - 1) * TR * S;
	h.gcache = t, t += (n - 1) * TR * S;
	h.integ = t, t += n - 1;
	h.rcache = t, t += M * S;
	h.gref = t, t += M * S;
	int *q = (int *)t;
	h.left = q, q += n - 1;
	h.right = q, q += n - 1;
	h.obj = q, q += n;
	h.order = q, q += n - 1;
	h.lvEnd = q, q += n + 1;
	h.height = q, q += 2 * n - 1;
	h.parent = q, q += 2 * n - 1;
	h.sel = q, q += h.np;
	h.active = q, q += n - 1;
	h.node = (unsigned *)q;
	h.red = (double *)gm_smem;
	h.hd = h.red + 6 * blockDim.x;
	h.hi = (int *)(h.hd + 4);
}

// hem_forward runs steps 1–6 of the file comment for mixture x (N > Np).
template <typename T, int D, int TR>
__device__ void hem_forward(Hem<T, D, TR> &h, HemFit<T, D, 2 * TR> &f, const T *x, ll P) {
	const ll tid = threadIdx.x, bd = blockDim.x, n = h.n, S = h.S;
	// 1. s = mean_k tr(Σ_k)/D in the CPU's order; float32 multiplies by
	// the reciprocals, float64 divides, as the CPU does.
	if (tid == 0) {
		T sc = hem_trace_sum<T, D>(x, n) / T(n * D);
		h.hd[0] = (double)sc, h.hd[1] = (double)(T)sqrt((double)sc);
	}
	__syncthreads();
	const T sc = (T)h.hd[0], sq = (T)h.hd[1];
	GM_NO_UNROLL for (ll i = tid; i < n * S; i += bd) {
		ll e = i % S;
		T v = x[i];
		if (e == 0)
			h.xs[i] = v;
		else if (sizeof(T) == 4)
			h.xs[i] = e <= D ? v * (T(1) / sq) : v * (T(1) / sc);
		else
			h.xs[i] = e <= D ? v / sq : v / sc;
	}
	// 2. Morton keys of the positions in their bounding box, index below.
	double lower[3], upper[3];
	for (int a = 0; a < 3; a++) lower[a] = INFINITY, upper[a] = -INFINITY;
	GM_NO_UNROLL for (ll i = tid; i < n; i += bd)
		for (int a = 0; a < D; a++) {
			double p = (double)x[i * S + 1 + a];
			lower[a] = fmin(lower[a], p), upper[a] = fmax(upper[a], p);
		}
	gm_block_box(lower, upper, h.red);
	double scale[3];
	gm_box_scales(D, lower, upper, scale);
	for (ll v = tid; v < P; v += bd) {
		if (v >= n) {
			h.keys[v] = ~0ull;
			continue;
		}
		unsigned code = 0;
		for (int a = 0; a < D; a++) code |= gm_morton_cell((double)x[v * S + 1 + a], lower[a], scale[a]) << (2 - a);
		h.keys[v] = (ull)code << 16 | (ull)v;
	}
	__syncthreads();
	gm_block_sort(h.keys, P);
	GM_NO_UNROLL for (ll j = tid; j < n; j += bd) h.obj[j] = (int)(h.keys[j] & 0xFFFF);
	// 3. The Karras tree: internal nodes [0, n−1), leaves n−1 + sorted index.
	GM_NO_UNROLL for (ll i = tid; i < n - 1; i += bd) {
		ll first = 0, last = n - 1;
		if (i > 0) {
			auto delta = [&](ll j) { return j < 0 || j >= n ? -1 : __clzll((long long)(h.keys[i] ^ h.keys[j])); };
			int dl = delta(i - 1), dr = delta(i + 1);
			ll dir = 1;
			int dmin = dl;
			if (dl > dr) dir = -1, dmin = dr;
			ll lmax = 2;
			while (delta(i + lmax * dir) > dmin) lmax *= 2;
			ll l = 0;
			for (ll t = lmax / 2; t >= 1; t /= 2)
				if (delta(i + (l + t) * dir) > dmin) l += t;
			ll j = i + l * dir;
			first = min(i, j), last = max(i, j);
		}
		ll split = gm_karras_split(h.keys, first, last);
		h.left[i] = (int)(split == first ? split + n - 1 : split);
		h.right[i] = (int)(split + 1 == last ? split + 1 + n - 1 : split + 1);
	}
	__syncthreads();
	// 4. Internal nodes by descending height (sortByHeight). The heights
	// bottom-up: a node's second child to arrive (counted in active) makes
	// its height and goes on up. Then a counting sort; nodes of one height
	// depend on none of each other, so their order within it (here the
	// arrival's, where sortByHeight keeps the pre-order) changes no result.
	GM_NO_UNROLL for (ll i = tid; i < n; i += bd) {
		h.height[n - 1 + i] = 0;
		if (i < n - 1) h.active[i] = 0, h.parent[h.left[i]] = (int)i, h.parent[h.right[i]] = (int)i;
	}
	GM_NO_UNROLL for (ll i = tid; i <= n; i += bd) h.lvEnd[i] = 0;
	__syncthreads();
	volatile int *height = h.height;
	GM_NO_UNROLL for (ll c = n - 1 + tid; c < 2 * n - 1; c += bd)
		for (ll x0 = c; x0 != 0;) {
			int p = h.parent[x0];
			__threadfence_block(); // x0's height before its arrival
			if (atomicAdd(&h.active[p], 1) == 0) break;
			__threadfence_block(); // the sibling's height after its arrival
			height[p] = max(height[h.left[p]], height[h.right[p]]) + 1;
			x0 = p;
		}
	__syncthreads();
	const int top = h.height[0];
	GM_NO_UNROLL for (ll i = tid; i < n - 1; i += bd) atomicAdd(&h.lvEnd[h.height[i]], 1);
	__syncthreads();
	if (tid == 0)
		for (int j = top - 1; j >= 1; j--) h.lvEnd[j] += h.lvEnd[j + 1]; // nodes of height ≥ j
	__syncthreads();
	GM_NO_UNROLL for (ll i = tid; i < n - 1; i += bd) h.order[atomicSub(&h.lvEnd[h.height[i]], 1) - 1] = (int)i;
	__syncthreads();
	if (tid == 0) {
		// lvEnd[j] is now where height j starts; make it where j − 1 starts.
		for (int j = top + 1; j >= 2; j--) h.lvEnd[j] = h.lvEnd[j - 1];
		h.lvEnd[1] = (int)(n - 1);
		h.hi[0] = top;
	}
	__syncthreads();
	// 5. Bottom-up, one height at a time.
	for (int hh = 1; hh <= top; hh++) {
		for (ll i = h.lvEnd[hh + 1] + tid; i < h.lvEnd[hh]; i += bd) h.fit_node(f, h.order[i]);
		__syncthreads();
	}
	// 6. Top-down selection (selectNodes) and the refit (refitNode).
	if (tid == 0) {
		int nsel = 1, refit = -1, refitK = 0;
		h.sel[0] = 0;
		ll cnt = h.count(0), limit = h.under ? h.np - TR : h.np;
		while (cnt < limit) {
			int best = -1;
			T bestR = -1;
			GM_NO_UNROLL for (int i = 0; i < nsel; i++) {
				ll x0 = h.sel[i];
				if (x0 < n - 1 && h.count(x0) == TR) {
					T rv = gm_abs(h.integ[x0]);
					if (rv > bestR) best = i, bestR = rv;
				}
			}
			if (best < 0) break;
			ll x0 = h.sel[best];
			ll delta = h.count(h.left[x0]) + h.count(h.right[x0]) - TR;
			if (!h.under && delta > h.np - cnt) {
				refit = best, refitK = (int)(TR + h.np - cnt);
				break;
			}
			h.sel[best] = h.left[x0];
			h.sel[nsel++] = h.right[x0];
			cnt += delta;
		}
		if (refit >= 0) {
			ll loc[2 * TR];
			unsigned keep;
			int m = h.collect(h.sel[refit], false, loc, keep);
			refitK = min(refitK, m);
			h.fit_into(f, loc, m, refitK, h.rcache);
		}
		h.hi[1] = nsel, h.hi[2] = refit, h.hi[3] = refitK;
	}
	__syncthreads();
}

// hem_setup makes block blk's view for a call.
template <typename T, int D, int TR>
__device__ Hem<T, D, TR> hem_setup(unsigned char *scratch, ll per, ll n, ll np, ll under, ll P) {
	Hem<T, D, TR> h;
	h.n = n, h.np = np, h.under = under != 0;
	hem_scratch(h, scratch, per, blockIdx.x, P);
	return h;
}

// hem_keep copies what the block's shared memory holds of mixture m's
// forward into its kept header (save), or back (!save).
template <typename T, int D, int TR> __device__ void hem_keep(Hem<T, D, TR> &h, bool save) {
	if (threadIdx.x == 0) {
		double *kd = h.kept;
		int *ki = (int *)(h.kept + 2);
		if (save) {
			kd[0] = h.hd[0], kd[1] = h.hd[1];
			for (int j = 0; j < 4; j++) ki[j] = h.hi[j];
		} else {
			h.hd[0] = kd[0], h.hd[1] = kd[1];
			for (int j = 0; j < 4; j++) h.hi[j] = ki[j];
		}
	}
	__syncthreads();
}

// hem_pad writes value i of the padding {0, 0, v·I} of stride S.
template <typename T, int D> __device__ __forceinline__ T hem_pad(ll i, T v) {
	const ll S = 1 + D + D * D, e = i % S;
	return e > D && (e - 1 - D) % (D + 1) == 0 ? v : T(0);
}

// gm_treehem writes y [B·C, Np, S]: every mixture of x [B·C, N, S] reduced
// to Np components (TreeHEMSaving), or passed through and padded where
// N ≤ Np. under selects the reference's under-filling.
template <typename T, int D, int TR>
__device__ void gm_treehem_dt(T *y, const T *x, unsigned char *scratch, ll nm, ll n, ll np, ll under, ll kept, ll per,
                              ll P) {
	const ll tid = threadIdx.x, bd = blockDim.x, S = 1 + D + D * D;
	Hem<T, D, TR> h = hem_setup<T, D, TR>(scratch, per, n, np, under, P);
	HemFit<T, D, 2 * TR> f;
	for (ll m = blockIdx.x; m < nm; m += gridDim.x) {
		if (kept) hem_scratch(h, scratch, per, m, P);
		const T *xm = x + m * n * S;
		T *ym = y + m * np * S;
		if (n <= np) {
			if (tid == 0) h.hd[0] = (double)(h.under ? hem_trace_sum<T, D>(xm, n) / T(n * D) : T(1));
			__syncthreads();
			T v = (T)h.hd[0];
			GM_NO_UNROLL for (ll i = tid; i < np * S; i += bd) ym[i] = i < n * S ? xm[i] : hem_pad<T, D>(i, v);
			__syncthreads();
			continue;
		}
		hem_forward(h, f, xm, P);
		if (kept) hem_keep(h, true);
		// 7. The selected caches scaled back, then the padding.
		if (tid == 0) {
			const T sc = (T)h.hd[0], sq = (T)h.hd[1];
			ll o = 0;
			for (int i = 0; i < h.hi[1]; i++) {
				int cnt;
				T *g;
				const T *v = h.selected(i, cnt, g);
				GM_NO_UNROLL for (int e = 0; e < cnt; e++, o++) {
					T *out = ym + o * S;
					const T *gv = v + e * S;
					out[0] = gv[0];
					for (int c = 0; c < D; c++) out[1 + c] = gv[1 + c] * sq;
					for (int c = 0; c < D * D; c++) out[1 + D + c] = gv[1 + D + c] * sc;
				}
			}
			T pv = h.under ? sc : T(1);
			GM_NO_UNROLL for (ll i = o * S; i < np * S; i++) ym[i] = hem_pad<T, D>(i, pv);
		}
		__syncthreads();
	}
}

// gm_treehem_backward writes dx [B·C, N, S], ∂L/∂x of gm_treehem given
// g = ∂L/∂y (TreeHEMBackward), with the decisions the forward makes.
template <typename T, int D, int TR>
__device__ void gm_treehem_backward_dt(T *dx, const T *x, const T *g, unsigned char *scratch, ll nm, ll n, ll np,
                                       ll under, ll kept, ll per, ll P) {
	const ll tid = threadIdx.x, bd = blockDim.x, S = 1 + D + D * D;
	Hem<T, D, TR> h = hem_setup<T, D, TR>(scratch, per, n, np, under, P);
	HemFit<T, D, 2 * TR> f;
	for (ll m = blockIdx.x; m < nm; m += gridDim.x) {
		if (kept) hem_scratch(h, scratch, per, m, P);
		const T *xm = x + m * n * S, *gm = g + m * np * S;
		T *dm = dx + m * n * S;
		if (n <= np) {
			if (tid == 0) h.hd[2] = (double)(h.under ? hem_trace_sum<T, D>(gm + n * S, np - n) : T(0));
			__syncthreads();
			T gtr = (T)h.hd[2] / T(n * D);
			GM_NO_UNROLL for (ll i = tid; i < n * S; i += bd) dm[i] = h.under ? gm[i] + hem_pad<T, D>(i, gtr) : gm[i];
			__syncthreads();
			continue;
		}
		if (kept)
			hem_keep(h, false); // the forward's tree, caches and selection are in the scratch
		else
			hem_forward(h, f, xm, P);
		GM_NO_UNROLL for (ll i = tid; i < n * S; i += bd) h.gxs[i] = 0;
		for (ll i = tid; i < (n - 1) * TR * S; i += bd) h.gcache[i] = 0;
		GM_NO_UNROLL for (ll i = tid; i < n - 1; i += bd) h.active[i] = 0;
		__syncthreads();
		// The selected entries' gradients through the scaling back, and
		// their share of ∂L/∂s.
		if (tid == 0) {
			const T sc = (T)h.hd[0], sq = (T)h.hd[1];
			for (int i = 0; i < h.M * S; i++) h.gref[i] = 0;
			T gs = 0;
			ll o = 0;
			for (int i = 0; i < h.hi[1]; i++) {
				int cnt;
				T *gv;
				const T *v = h.selected(i, cnt, gv);
				GM_NO_UNROLL for (int e = 0; e < cnt; e++, o++) {
					const T *gy = gm + o * S, *ve = v + e * S;
					T *ge = gv + e * S;
					ge[0] += gy[0];
					for (int c = 0; c < D; c++) {
						ge[1 + c] += gy[1 + c] * sq;
						gs += gy[1 + c] * ve[1 + c] / (2 * sq);
					}
					for (int c = 0; c < D * D; c++) {
						ge[1 + D + c] += gy[1 + D + c] * sc;
						gs += gy[1 + D + c] * ve[1 + D + c];
					}
				}
				if (h.sel[i] < n - 1 && i != h.hi[2]) h.active[h.sel[i]] = 1;
			}
			if (h.under) gs += hem_trace_sum<T, D>(gm + o * S, np - o);
			if (h.hi[2] >= 0) h.back_node(f, h.sel[h.hi[2]], h.gref, h.hi[3]);
			h.hd[2] = (double)gs;
		}
		__syncthreads();
		// Top-down, one height at a time.
		for (int hh = h.hi[0]; hh >= 1; hh--) {
			for (ll i = h.lvEnd[hh + 1] + tid; i < h.lvEnd[hh]; i += bd) {
				ll x0 = h.order[i];
				if (h.active[x0]) h.back_node(f, x0, h.gcache + x0 * TR * S, TR);
			}
			__syncthreads();
		}
		// The pre-scaling μ' = μ/√s, Σ' = Σ/s, with s = mean_k tr(Σ_k)/D:
		// each component's share of ∂L/∂s into its gxs weight, once read,
		// summed in the CPU's order by one thread (xs stays as the forward
		// left it, for another backward from kept scratch).
		const T sc = (T)h.hd[0], sq = (T)h.hd[1];
		const T isq = T(1) / sq, isc = T(1) / sc;
		const T isc2sq = isc * isq / 2, isc2 = isc * isc;
		GM_NO_UNROLL for (ll k = tid; k < n; k += bd) {
			const T *gk = h.gxs + k * S, *xk = xm + k * S;
			T *dk = dm + k * S;
			dk[0] = gk[0];
			T pm = 0, pc = 0;
			for (int c = 1; c <= D; c++) {
				dk[c] = gk[c] * isq;
				pm += gk[c] * xk[c];
			}
			for (int c = 1 + D; c < S; c++) {
				dk[c] = gk[c] * isc;
				pc += gk[c] * xk[c];
			}
			h.gxs[k * S] = pm * isc2sq + pc * isc2;
		}
		__syncthreads();
		if (tid == 0) {
			T gs = hem_ordered_sum((T)h.hd[2], n, [&](ll k) { return -h.gxs[k * S]; });
			h.hd[3] = (double)(gs / T(n * D));
		}
		__syncthreads();
		const T gtr = (T)h.hd[3];
		GM_NO_UNROLL for (ll k = tid; k < n; k += bd)
			for (int c = 0; c < D * D; c += D + 1) dm[k * S + 1 + D + c] += gtr;
		__syncthreads();
	}
}

// The exported kernels gm_treehem<T>_f32/_f64 and gm_treehem<T>_backward_…
// take D at run time and dispatch to its instantiation; the reduction factor
// T ∈ {2, 4, 8} is in the name, so that each kernel reserves only the local
// memory its own HemFit takes (for T = 8 about 16 KiB per thread in float32,
// which a kernel dispatching T at run time would reserve for T = 2 too).
#define HEM_BY_DIM(d, f, T, TR, ...) ((d) == 2 ? f<T, 2, TR>(__VA_ARGS__) : f<T, 3, TR>(__VA_ARGS__))
#define GM_TREEHEM_PARAMS(T)                                                                                          \
	(T * y, const T *x, unsigned char *scratch, ll nm, ll n, ll d, ll np, ll under, ll kept, ll per, ll P)
#define GM_TREEHEM_BW_PARAMS(T)                                                                                       \
	(T * dx, const T *x, const T *g, unsigned char *scratch, ll nm, ll n, ll d, ll np, ll under, ll kept, ll per, ll P)
#define HEM_EXPORT(TR)                                                                                               \
	template <typename T>                                                                                            \
	__device__ void gm_treehem##TR(T *y, const T *x, unsigned char *scratch, ll nm, ll n, ll d, ll np, ll under,    \
	                               ll kept, ll per, ll P) {                                                          \
		HEM_BY_DIM(d, gm_treehem_dt, T, TR, y, x, scratch, nm, n, np, under, kept, per, P);                         \
	}                                                                                                                \
	GM_EXPORT(gm_treehem##TR, GM_TREEHEM_PARAMS, (y, x, scratch, nm, n, d, np, under, kept, per, P))                \
	template <typename T>                                                                                            \
	__device__ void gm_treehem##TR##_backward(T *dx, const T *x, const T *g, unsigned char *scratch, ll nm, ll n,   \
	                                          ll d, ll np, ll under, ll kept, ll per, ll P) {                        \
		HEM_BY_DIM(d, gm_treehem_backward_dt, T, TR, dx, x, g, scratch, nm, n, np, under, kept, per, P);            \
	}                                                                                                                \
	GM_EXPORT(gm_treehem##TR##_backward, GM_TREEHEM_BW_PARAMS, (dx, x, g, scratch, nm, n, d, np, under, kept, per, P))
HEM_EXPORT(2)
HEM_EXPORT(4)
HEM_EXPORT(8)
