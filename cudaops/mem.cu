// mem.cu: gm.MEM, the modified EM reduction (ops/cpu/mem.go), and its
// gradient. One block per mixture (at most memGrid blocks, each looping over
// the mixtures m ≡ blockIdx.x), its scratch in global memory: one region per
// block, or with kept one per mixture, where the forward leaves its
// selection, likelihoods and statistics and the backward for the same input
// starts from them (the block op keeps them from one to the other). The work is
// spread over the targets i (thread i) and the fitting components s (thread
// s), and every sum is made by one thread in the CPU's order: over the
// components for a target, over the targets for a component, the mixture's
// totals by thread 0. So in float64 the results agree with the CPU's to
// rounding (exp and log differ in the last bit), and the decisions (the K
// largest |w| as the initial fitting, the clamps) are the CPU's.
#include "gm.cuh"

// The constants of ops/cpu/mem.go.
#define MEM_SAMPLES 20
#define MEM_MIN_INTEGRAL 0.05
#define MEM_MIN_DIVISOR 1e-5
#define MEM_DEAD_WEIGHT 1e-4
#define MEM_DEAD_COV 1e-4

template <typename T> __device__ __forceinline__ T mem_sign(T x) { return x > 0 ? T(1) : x < 0 ? T(-1) : T(0); }

// MemFit is the state of one fitting component s (memFit on the CPU): the
// initial component's centre, inverse covariance and log normaliser, for
// the likelihoods, then u_s, sign_s, π_s, P_s = max(π_s, 1e−5) and μ'_s, and
// in the backward the gradients.
template <typename T> struct MemFit {
	T u, pi, p, sign, logNorm, gpi, gp, gu;
	T c[3], mu[3], inv[9], gmu[3], gcov[9], gsym[9];
};

// Mem is one block's view of its scratch region (memScratch in
// mem_gmcuda.go sizes it): a header of 8 values (S = max(Σ|w|, 0.05),
// V = max(Σ_s |v_s|, 0.05), ∂L/∂S, whether each clamp is inactive, ∂L/∂V),
// N·K likelihoods, responsibilities, gradients of β and terms of ∂L/∂u_s, N
// values a_i, max(Σ_s q_is, 1e−5) and ∂L/∂a_i·a_i/S, K MemFit, K selected
// indices. The backward writes only the gradients, so a second backward
// from a kept region finds the forward's values intact.
template <typename T> struct Mem {
	ll n, k;
	T *hd, *lik, *resp, *gb, *gu, *a, *q, *ga;
	MemFit<T> *fs;
	int *sel;
};

// mem_setup returns the view of scratch region r.
template <typename T> __device__ Mem<T> mem_setup(unsigned char *scratch, ll per, ll r, ll n, ll np) {
	Mem<T> h;
	h.n = n, h.k = min(n, np);
	T *t = (T *)(scratch + r * per);
	const ll nk = n * h.k;
	h.hd = t, t += 8;
	h.lik = t, t += nk;
	h.resp = t, t += nk;
	h.gb = t, t += nk;
	h.gu = t, t += nk;
	h.a = t, t += n;
	h.q = t, t += n;
	h.ga = t, t += n;
	h.fs = (MemFit<T> *)t, t += h.k * (ll)(sizeof(MemFit<T>) / sizeof(T));
	h.sel = (int *)t;
	return h;
}

// mem_stats is what the forward and the backward share (memLikelihoods and
// memStats): S, the selection of the K largest |w| (descending, the lower
// index first on ties: a stable sort), V and each fitting component's
// constants, per target a_i, the likelihoods L_is, the responsibilities
// r_is and max(Σ_s q_is, 1e−5), per fitting component π_s, P_s and μ'_s.
template <typename T, int D> __device__ void mem_stats(Mem<T> &h, const T *mx) {
	const ll tid = threadIdx.x, bd = blockDim.x, n = h.n, k = h.k, S = 1 + D + D * D;
	if (tid == 0) {
		T a = 0;
		GM_NO_UNROLL for (ll i = 0; i < n; i++) a += gm_abs(mx[i * S]);
		h.hd[0] = a > T(MEM_MIN_INTEGRAL) ? a : T(MEM_MIN_INTEGRAL);
		h.hd[3] = a > T(MEM_MIN_INTEGRAL) ? T(1) : T(0);
	}
	GM_NO_UNROLL for (ll i = tid; i < n; i += bd) {
		T wi = gm_abs(mx[i * S]);
		ll r = 0;
		GM_NO_UNROLL for (ll j = 0; j < n; j++) {
			T wj = gm_abs(mx[j * S]);
			r += wj > wi || (wj == wi && j < i);
		}
		if (r < k) h.sel[r] = (int)i;
	}
	__syncthreads();
	if (tid == 0) {
		T v = 0;
		GM_NO_UNROLL for (ll s = 0; s < k; s++) v += gm_abs(mx[(ll)h.sel[s] * S]);
		h.hd[1] = v > T(MEM_MIN_INTEGRAL) ? v : T(MEM_MIN_INTEGRAL);
		h.hd[4] = v > T(MEM_MIN_INTEGRAL) ? T(1) : T(0);
	}
	__syncthreads();
	const T total = h.hd[0], vsum = h.hd[1];
	GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
		const T *g = mx + (ll)h.sel[s] * S;
		MemFit<T> &f = h.fs[s];
		T det = gm_inv_det(D, g + 1 + D, f.inv);
		// mixture.Prepare's norm in float64, then its logarithm in float64.
		T norm = (T)(gm_norm_const<double>(D) / sqrt((double)det));
		f.logNorm = (T)log((double)norm);
		for (int r = 0; r < D; r++) f.c[r] = g[1 + r], f.mu[r] = 0;
		f.u = gm_abs(g[0]) / vsum, f.sign = mem_sign(g[0]);
		f.pi = f.gpi = f.gp = f.gu = 0;
	}
	__syncthreads();
	GM_NO_UNROLL for (ll i = tid; i < n; i += bd) {
		const T *g = mx + i * S;
		T ai = gm_abs(g[0]) / total;
		h.a[i] = ai;
		T *row = h.lik + i * k, *resp = h.resp + i * k;
		GM_NO_UNROLL for (ll s = 0; s < k; s++) {
			const MemFit<T> &f = h.fs[s];
			T tr = 0, t[D];
			for (int e = 0; e < D * D; e++) tr += f.inv[e] * g[1 + D + e];
			for (int r = 0; r < D; r++) t[r] = g[1 + r] - f.c[r];
			T ex = T(-0.5) * gm_quad(D, f.inv, t);
			row[s] = gm_exp(T(MEM_SAMPLES) * ai * (f.logNorm + ex - tr / 2));
		}
		T q = 0;
		GM_NO_UNROLL for (ll s = 0; s < k; s++) {
			resp[s] = row[s] * h.fs[s].u;
			q += resp[s];
		}
		q = q > T(MEM_MIN_DIVISOR) ? q : T(MEM_MIN_DIVISOR);
		h.q[i] = q;
		GM_NO_UNROLL for (ll s = 0; s < k; s++) resp[s] /= q;
	}
	__syncthreads();
	GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
		MemFit<T> &f = h.fs[s];
		T pi = 0, mu[D];
		for (int r = 0; r < D; r++) mu[r] = 0;
		GM_NO_UNROLL for (ll i = 0; i < n; i++) {
			T rho = h.resp[i * k + s] * h.a[i];
			pi += rho;
			for (int r = 0; r < D; r++) mu[r] += rho * mx[i * S + 1 + r];
		}
		f.pi = pi;
		f.p = pi > T(MEM_MIN_DIVISOR) ? pi : T(MEM_MIN_DIVISOR);
		for (int r = 0; r < D; r++) f.mu[r] = mu[r] / f.p;
	}
	__syncthreads();
}

// gm_mem writes y [B·C, Np, S]: every mixture of x [B·C, N, S] reduced to
// K = min(N, Np) components by one modified EM step, and padding slots
// {0, 0, I} beyond them (MEM).
template <typename T, int D>
__device__ void gm_mem_d(T *y, const T *x, unsigned char *scratch, ll nm, ll n, ll np, ll kept, ll per) {
	const ll tid = threadIdx.x, bd = blockDim.x, S = 1 + D + D * D;
	for (ll m = blockIdx.x; m < nm; m += gridDim.x) {
		Mem<T> h = mem_setup<T>(scratch, per, kept ? m : blockIdx.x, n, np);
		const ll k = h.k;
		const T *mx = x + m * n * S;
		T *ym = y + m * np * S;
		mem_stats<T, D>(h, mx);
		const T total = h.hd[0];
		GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
			const MemFit<T> &f = h.fs[s];
			T cov[D * D];
			for (int e = 0; e < D * D; e++) cov[e] = 0;
			GM_NO_UNROLL for (ll i = 0; i < n; i++) {
				T rho = h.resp[i * k + s] * h.a[i];
				if (rho == 0) continue;
				const T *g = mx + i * S;
				T b = rho / f.p, t[D];
				for (int r = 0; r < D; r++) t[r] = g[1 + r] - f.mu[r];
				for (int r = 0; r < D; r++)
					for (int c = 0; c < D; c++) cov[r * D + c] += b * (g[1 + D + r * D + c] + t[r] * t[c]);
			}
			if (f.pi < T(MEM_DEAD_WEIGHT))
				for (int r = 0; r < D; r++) cov[r * D + r] += T(MEM_DEAD_COV);
			T *o = ym + s * S;
			o[0] = f.pi * f.sign * total;
			for (int r = 0; r < D; r++) o[1 + r] = f.mu[r];
			for (int e = 0; e < D * D; e++) o[1 + D + e] = cov[e];
		}
		GM_NO_UNROLL for (ll i = k * S + tid; i < np * S; i += bd) {
			ll e = i % S - 1 - D;
			ym[i] = e >= 0 && e % (D + 1) == 0 ? T(1) : T(0);
		}
		__syncthreads(); // the scratch is free for the next mixture
	}
}

// gm_mem_backward writes dx [B·C, N, S], ∂L/∂x of gm_mem given g = ∂L/∂y,
// with the selection and the likelihoods held fixed (MEMBackward): reverse
// mode through the responsibilities, π, μ' and Σ', as memBackward. With
// kept it starts from what the forward for this x left in mixture m's
// region, else it makes that again.
template <typename T, int D>
__device__ void gm_mem_backward_d(T *dx, const T *x, const T *g, unsigned char *scratch, ll nm, ll n, ll np, ll kept,
                                  ll per) {
	const ll tid = threadIdx.x, bd = blockDim.x, S = 1 + D + D * D;
	for (ll m = blockIdx.x; m < nm; m += gridDim.x) {
		Mem<T> h = mem_setup<T>(scratch, per, kept ? m : blockIdx.x, n, np);
		const ll k = h.k;
		const T *mx = x + m * n * S, *gy = g + m * np * S;
		T *dm = dx + m * n * S;
		if (!kept) mem_stats<T, D>(h, mx);
		const T total = h.hd[0];
		// The outputs' gradients per fitting component: ∂L/∂π_s through the
		// weight, G_s, G_s + G_sᵀ and ĝ_s; and ∂L/∂S through the weights.
		GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
			MemFit<T> &f = h.fs[s];
			const T *o = gy + s * S;
			f.gpi = o[0] * f.sign * total;
			for (int e = 0; e < D * D; e++) f.gcov[e] = o[1 + D + e];
			for (int r = 0; r < D; r++)
				for (int c = 0; c < D; c++) f.gsym[r * D + c] = f.gcov[r * D + c] + f.gcov[c * D + r];
			T gm[D];
			gm_matvec(D, f.gsym, f.mu, gm);
			T c = 1 - f.pi / f.p;
			for (int r = 0; r < D; r++) f.gmu[r] = o[1 + r] - c * gm[r];
		}
		if (tid == 0) {
			T gS = 0;
			GM_NO_UNROLL for (ll s = 0; s < k; s++) gS += gy[s * S] * h.fs[s].pi * h.fs[s].sign;
			h.hd[2] = gS;
		}
		__syncthreads();
		// Pass A per target: ∂β_is, and the position and covariance gradients.
		GM_NO_UNROLL for (ll i = tid; i < n; i += bd) {
			const T *gi = mx + i * S, *cov = gi + 1 + D;
			T *dg = dm + i * S;
			for (int e = 0; e < S; e++) dg[e] = 0;
			GM_NO_UNROLL for (ll s = 0; s < k; s++) {
				const MemFit<T> &f = h.fs[s];
				T rho = h.resp[i * k + s] * h.a[i], t[D], gb = 0;
				for (int r = 0; r < D; r++) t[r] = gi[1 + r] - f.mu[r];
				for (int e = 0; e < D * D; e++) gb += f.gcov[e] * cov[e];
				gb += gm_quad(D, f.gcov, t);
				for (int r = 0; r < D; r++) gb += f.gmu[r] * gi[1 + r];
				h.gb[i * k + s] = gb;
				if (rho == 0) continue;
				T b = rho / f.p, gt[D];
				gm_matvec(D, f.gsym, t, gt);
				for (int r = 0; r < D; r++) dg[1 + r] += b * (f.gmu[r] + gt[r]);
				for (int e = 0; e < D * D; e++) dg[1 + D + e] += b * f.gcov[e];
			}
		}
		__syncthreads();
		// ∂P_s over the targets, folded into ∂π_s where the clamp is inactive.
		GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
			MemFit<T> &f = h.fs[s];
			T gp = 0;
			GM_NO_UNROLL for (ll i = 0; i < n; i++) {
				T rho = h.resp[i * k + s] * h.a[i];
				if (rho == 0) continue;
				T b = rho / f.p;
				gp -= h.gb[i * k + s] * b / f.p;
			}
			f.gp = gp;
			if (f.pi > T(MEM_MIN_DIVISOR)) f.gpi += gp;
		}
		__syncthreads();
		// Pass B per target: through ρ = r·a and r = q / max(Σq, 1e−5), and
		// each pair's term of ∂L/∂u_s.
		GM_NO_UNROLL for (ll i = tid; i < n; i += bd) {
			const T ai = h.a[i], q = h.q[i];
			T *resp = h.resp + i * k, *gb = h.gb + i * k, *row = h.lik + i * k, *gu = h.gu + i * k;
			T ga = 0, gq = 0;
			GM_NO_UNROLL for (ll s = 0; s < k; s++) {
				T grho = gb[s] / h.fs[s].p + h.fs[s].gpi;
				ga += grho * resp[s];
				gb[s] = grho * ai;
				gq -= gb[s] * resp[s] / q;
			}
			if (q <= T(MEM_MIN_DIVISOR)) gq = 0;
			GM_NO_UNROLL for (ll s = 0; s < k; s++) gu[s] = (gb[s] / q + gq) * row[s];
			h.ga[i] = ga;
			dm[i * S] += ga / total * mem_sign(mx[i * S]);
		}
		__syncthreads();
		GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
			T gu = 0;
			GM_NO_UNROLL for (ll i = 0; i < n; i++) gu += h.gu[i * k + s];
			h.fs[s].gu = gu;
		}
		if (tid == 0) {
			T gS = h.hd[2];
			GM_NO_UNROLL for (ll i = 0; i < n; i++) gS -= h.ga[i] * h.a[i] / total;
			h.hd[2] = gS;
		}
		__syncthreads();
		// Through the clamped sum S into every weight, and the sum over the
		// fitting components of ∂L/∂V.
		if (h.hd[3] != 0) {
			const T gS = h.hd[2];
			GM_NO_UNROLL for (ll i = tid; i < n; i += bd) dm[i * S] += gS * mem_sign(mx[i * S]);
		}
		if (tid == 0) {
			T gV = 0;
			GM_NO_UNROLL for (ll s = 0; s < k; s++) gV -= h.fs[s].gu * h.fs[s].u / h.hd[1];
			h.hd[5] = gV;
		}
		__syncthreads();
		// Through u_s = |v_s| / max(Σ|v|, 0.05) into the selected weights.
		GM_NO_UNROLL for (ll s = tid; s < k; s += bd) {
			T gv = h.fs[s].gu / h.hd[1];
			if (h.hd[4] != 0) gv += h.hd[5];
			ll j = h.sel[s];
			dm[j * S] += gv * mem_sign(mx[j * S]);
		}
		__syncthreads(); // the scratch is free for the next mixture
	}
}

// The exported kernels take D at run time and dispatch to its instantiation.
template <typename T>
__device__ void gm_mem(T *y, const T *x, unsigned char *scratch, ll nm, ll n, ll d, ll np, ll kept, ll per) {
	GM_BY_DIM(d, gm_mem_d, y, x, scratch, nm, n, np, kept, per);
}
#define GM_MEM_PARAMS(T) (T * y, const T *x, unsigned char *scratch, ll nm, ll n, ll d, ll np, ll kept, ll per)
GM_EXPORT(gm_mem, GM_MEM_PARAMS, (y, x, scratch, nm, n, d, np, kept, per))

template <typename T>
__device__ void gm_mem_backward(T *dx, const T *x, const T *g, unsigned char *scratch, ll nm, ll n, ll d, ll np,
                                ll kept, ll per) {
	GM_BY_DIM(d, gm_mem_backward_d, dx, x, g, scratch, nm, n, np, kept, per);
}
#define GM_MEM_BW_PARAMS(T)                                                                                           \
	(T * dx, const T *x, const T *g, unsigned char *scratch, ll nm, ll n, ll d, ll np, ll kept, ll per)
GM_EXPORT(gm_mem_backward, GM_MEM_BW_PARAMS, (dx, x, g, scratch, nm, n, d, np, kept, per))
