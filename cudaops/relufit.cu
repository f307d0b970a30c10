// relufit.cu: gm.ReLUFit, the dense ReLU fit of every mixture, and its
// gradient (ops/cpu/relufit.go). With E_kj = N(μ_k; μ_j, Σ_j) and the
// coarse weights x (reference: max(a,0) + coarse; paper: a if a > 0 else
// floor):
//
//	t_k = Σ_j a_j E_kj,  e_k = Σ_j x_j E_kj,  a″_k = x_k (max(t_k,0) + off)/(e_k + off).
//
// Both sums share every E_kj, so one O(N²) pass computes them. A block owns
// blockDim.x centroids of one mixture (grid (B·C, ⌈N/blockDim⌉)); the
// components stream through shared memory in tiles of blockDim.x, each
// prepared once by the thread that loads it. Dynamic shared memory:
// blockDim.x·sizeof(GmRelu<T>). Every kernel is compiled per dimension (the
// templates over D): with a run-time d the loops over small arrays cannot
// be unrolled, and the compiler keeps the arrays in local memory.
#include "gm.cuh"

template <typename T> struct GmRelu {
	T an, xn, a, x, norm; // a·norm, x·norm, a, x, (2π)^(−D/2) det(Σ)^(−½)
	T mu[3];
	T inv[9];
};

template <typename T> __device__ T gm_coarse(T a, ll paper, double coarse, double floor_) {
	if (paper) return a > 0 ? a : T(floor_);
	return (a > 0 ? a : T(0)) + T(coarse);
}

template <typename T>
__device__ void gm_relu_load(int d, const T *g, GmRelu<T> &r, ll paper, double coarse, double floor_) {
	T det = gm_inv_det(d, g + 1 + d, r.inv);
	T norm = gm_norm_const<T>(d) / gm_sqrt(det);
	r.norm = norm;
	r.a = g[0];
	r.x = gm_coarse(g[0], paper, coarse, floor_);
	r.an = r.a * norm;
	r.xn = r.x * norm;
	for (int j = 0; j < d; j++) r.mu[j] = g[1 + j];
}

// gm_relu_sums computes t_k and e_k at the centroid q of this thread, with
// every thread of the block taking part in loading the tiles.
template <typename T, int D>
__device__ void gm_relu_sums(const T *mx, ll n, const T *q, T &t, T &e, ll paper, double coarse, double floor_) {
	const int d = D;
	GmRelu<T> *tile = (GmRelu<T> *)gm_smem;
	ll s = 1 + d + d * d;
	t = 0;
	e = 0;
	for (ll j0 = 0; j0 < n; j0 += blockDim.x) {
		ll j = j0 + threadIdx.x;
		if (j < n) gm_relu_load(d, mx + j * s, tile[threadIdx.x], paper, coarse, floor_);
		__syncthreads();
		ll jn = min((ll)blockDim.x, n - j0);
		for (ll u = 0; u < jn; u++) {
			const GmRelu<T> &g = tile[u];
			T v[3];
			for (int c = 0; c < d; c++) v[c] = q[c] - g.mu[c];
			T ex = gm_exp(T(-0.5) * gm_quad(d, g.inv, v));
			t += g.an * ex;
			e += g.xn * ex;
		}
		__syncthreads();
	}
}

// gm_relu_centroid computes t_k and e_k at the position of this thread's
// centroid k = blockIdx.y·blockDim.x + threadIdx.x of mixture blockIdx.x
// (the grid of gm_relufit) and returns k. Every thread of the block must
// call it, also those with k ≥ n.
template <typename T, int D>
__device__ ll gm_relu_centroid(const T *x, ll n, T &t, T &e, ll paper, double coarse, double floor_) {
	const ll d = D;
	ll k = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	const T *mx = x + (ll)blockIdx.x * n * s;
	T q[3] = {0, 0, 0};
	if (k < n)
		for (ll c = 0; c < d; c++) q[c] = mx[k * s + 1 + c];
	gm_relu_sums<T, D>(mx, n, q, t, e, paper, coarse, floor_);
	return k;
}

template <typename T, int D>
__device__ void gm_relufit_d(T *y, const T *x, ll n, ll paper, double coarse, double floor_, double off) {
	const ll d = D;
	T t, e;
	ll k = gm_relu_centroid<T, D>(x, n, t, e, paper, coarse, floor_);
	if (k >= n) return;
	ll s = 1 + d + d * d;
	ll i = (ll)blockIdx.x * n + k;
	const T *g = x + i * s;
	T *o = y + i * s;
	T xk = gm_coarse(g[0], paper, coarse, floor_);
	o[0] = xk * ((t > 0 ? t : T(0)) + T(off)) / (e + T(off));
	for (ll c = 1; c < s; c++) o[c] = g[c];
}
template <typename T>
__device__ void gm_relufit(T *y, const T *x, ll n, ll d, ll paper, double coarse, double floor_, double off) {
	GM_BY_DIM(d, gm_relufit_d, y, x, n, paper, coarse, floor_, off);
}
#define GM_RELU_PARAMS(T) (T * y, const T *x, ll n, ll d, ll paper, double coarse, double floor_, double off)
GM_EXPORT(gm_relufit, GM_RELU_PARAMS, (y, x, n, d, paper, coarse, floor_, off))

// Backward pass 1, per centroid k (same grid as the forward): recompute t_k
// and e_k and store, in work [B·C·N·3], ∂L/∂t_k, ∂L/∂e_k and the direct
// ∂L/∂x_k: with r = (max(t,0)+off)/(e+off),
// ∂x = g r, ∂t = g x/(e+off)·[t > 0], ∂e = −g x r/(e+off).
template <typename T, int D>
__device__ void gm_relufit_backward_point_d(T *work, const T *x, const T *g, ll n, ll paper, double coarse, double floor_, double off) {
	const ll d = D;
	T t, e;
	ll k = gm_relu_centroid<T, D>(x, n, t, e, paper, coarse, floor_);
	if (k >= n) return;
	ll s = 1 + d + d * d;
	ll i = (ll)blockIdx.x * n + k;
	T gk = g[i * s];
	T xk = gm_coarse(x[i * s], paper, coarse, floor_);
	T den = e + T(off);
	T r = ((t > 0 ? t : T(0)) + T(off)) / den;
	T *w = work + i * 3;
	w[0] = t > 0 ? gk * xk / den : T(0);
	w[1] = -gk * xk * r / den;
	w[2] = gk * r;
}
template <typename T>
__device__ void gm_relufit_backward_point(T *work, const T *x, const T *g, ll n, ll d, ll paper, double coarse, double floor_, double off) {
	GM_BY_DIM(d, gm_relufit_backward_point_d, work, x, g, n, paper, coarse, floor_, off);
}
#define GM_RELU_BP_PARAMS(T) (T * work, const T *x, const T *g, ll n, ll d, ll paper, double coarse, double floor_, double off)
GM_EXPORT(gm_relufit_backward_point, GM_RELU_BP_PARAMS, (work, x, g, n, d, paper, coarse, floor_, off))

// Backward pass 2, per component j (same grid): with G_kj = ∂t_k a_j + ∂e_k x_j,
// w_kj = G_kj E_kj and u_kj = A_j (μ_k − μ_j),
//
//	∂a_j = Σ_k ∂t_k E_kj + [a_j > 0]·(∂x_j + Σ_k ∂e_k E_kj)
//	∂μ_j = g_μj + Σ_k w_kj u_kj − Σ_i w_ji u_ji
//	∂Σ_j = g_Σj + ½ (Σ_k w_kj u_kj u_kjᵀ − (Σ_k w_kj) A_j)
//
// The sums over k (j as the evaluated component) and over i (j as the
// evaluation point) each stream the other components through shared memory.
// With a run-time d this kernel kept U, UU and KQ in 152 bytes per thread
// of local memory.
template <typename T, int D>
__device__ void gm_relufit_backward_component_d(T *dx, const T *x, const T *g, const T *work, ll n, ll paper, double coarse, double floor_) {
	const ll d = D;
	GmRelu<T> *tile = (GmRelu<T> *)gm_smem;
	T *wtile = (T *)(tile + blockDim.x); // blockDim.x rows of (μ_k, ∂t_k, ∂e_k)
	ll mi = blockIdx.x;
	ll j = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	const int di = D;
	const T *mx = x + mi * n * s;
	const T *wk = work + mi * n * 3;
	GmRelu<T> me;
	T gtj = 0, gej = 0;
	if (j < n) {
		gm_relu_load(di, mx + j * s, me, paper, coarse, floor_);
		gtj = wk[j * 3];
		gej = wk[j * 3 + 1];
	}
	T ga = 0, gx = 0, wsum = 0, U[3] = {0, 0, 0}, UU[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, KQ[3] = {0, 0, 0};
	for (ll k0 = 0; k0 < n; k0 += blockDim.x) {
		ll k = k0 + threadIdx.x;
		if (k < n) {
			gm_relu_load(di, mx + k * s, tile[threadIdx.x], paper, coarse, floor_);
			T *row = wtile + threadIdx.x * (d + 2);
			for (ll c = 0; c < d; c++) row[c] = mx[k * s + 1 + c];
			row[d] = wk[k * 3];
			row[d + 1] = wk[k * 3 + 1];
		}
		__syncthreads();
		ll kn = min((ll)blockDim.x, n - k0);
		if (j < n)
			for (ll v = 0; v < kn; v++) {
				// j as the evaluated component at centroid k.
				const T *row = wtile + v * (d + 2);
				T dl[3], u[3];
				T qf = gm_offset_form(di, me.inv, row, me.mu, dl, u);
				T E = me.norm * gm_exp(T(-0.5) * qf);
				T et = row[d] * E, ee = row[d + 1] * E;
				ga += et;
				gx += ee;
				T w = et * me.a + ee * me.x;
				wsum += w;
				for (int r = 0; r < di; r++) {
					U[r] += w * u[r];
					for (int c = 0; c < di; c++) UU[r * di + c] += w * u[r] * u[c];
				}
				// j as the evaluation point of component i = k.
				const GmRelu<T> &gi = tile[v];
				qf = gm_offset_form(di, gi.inv, me.mu, gi.mu, dl, u);
				T ex = gm_exp(T(-0.5) * qf);
				T wi = (gtj * gi.an + gej * gi.xn) * ex;
				for (int c = 0; c < di; c++) KQ[c] += wi * u[c];
			}
		__syncthreads();
	}
	if (j >= n) return;
	const T *gj = g + (mi * n + j) * s;
	T *o = dx + (mi * n + j) * s;
	o[0] = ga + (me.a > 0 ? wk[j * 3 + 2] + gx : T(0));
	for (int c = 0; c < di; c++) o[1 + c] = gj[1 + c] + U[c] - KQ[c];
	for (int e = 0; e < di * di; e++) o[1 + d + e] = gj[1 + d + e] + T(0.5) * (UU[e] - wsum * me.inv[e]);
}
template <typename T>
__device__ void gm_relufit_backward_component(T *dx, const T *x, const T *g, const T *work, ll n, ll d, ll paper, double coarse, double floor_) {
	GM_BY_DIM(d, gm_relufit_backward_component_d, dx, x, g, work, n, paper, coarse, floor_);
}
#define GM_RELU_BC_PARAMS(T) (T * dx, const T *x, const T *g, const T *work, ll n, ll d, ll paper, double coarse, double floor_)
GM_EXPORT(gm_relufit_backward_component, GM_RELU_BC_PARAMS, (dx, x, g, work, n, d, paper, coarse, floor_))
