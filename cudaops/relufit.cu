// relufit.cu: gm.ReLUFit, the dense ReLU fit of every mixture, and its
// gradient (ops/cpu/relufit.go). With E_kj = N(μ_k; μ_j, Σ_j), the
// mixture's constant κ (kappa[m]; 0 without constants) and the coarse
// weights x (device.CoarseWeight: |a| where a + κ > 0, else κ⁺; plus
// coarse, or floor for 0 in the paper's variant):
//
//	t_k = Σ_j a_j E_kj + κ,  e_k = Σ_j x_j E_kj,  a″_k = x_k (max(t_k,0) − κ⁺ + off)/(e_k + off).
//
// With given targets (tg, one per component: the fused blocks' exact
// targets) t_k = κ + tg[k] instead, and a enters only the coarse weights.
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

// gm_coarse is device.CoarseWeight: the coarse weight of input weight a
// under constant kappa.
template <typename T> __device__ T gm_coarse(T a, T kappa, ll paper, double coarse, double floor_) {
	T v = -(kappa > 0 ? kappa : T(0));
	if (a + kappa > 0) v = a;
	if (v < 0) v = -v;
	if (!paper) return v + T(coarse);
	return v == 0 ? T(floor_) : v;
}

// GmReluFit is what every kernel of one call shares: the variant's
// constants, the mixtures' constants kappa (null: none) and the given
// targets tg (null: none).
template <typename T> struct GmReluFit {
	const T *kappa, *tg;
	ll paper;
	double coarse, floor_;
	__device__ T constant(ll m) const { return kappa ? kappa[m] : T(0); }
};

template <typename T>
__device__ void gm_relu_load(int d, const T *g, GmRelu<T> &r, T kappa, const GmReluFit<T> &f) {
	T det = gm_inv_det(d, g + 1 + d, r.inv);
	T norm = gm_norm_const<T>(d) / gm_sqrt(det);
	r.norm = norm;
	r.a = g[0];
	r.x = gm_coarse(g[0], kappa, f.paper, f.coarse, f.floor_);
	r.an = f.tg ? T(0) : r.a * norm; // given targets: a adds nothing to t
	r.xn = r.x * norm;
	for (int j = 0; j < d; j++) r.mu[j] = g[1 + j];
}

// gm_relu_sums computes Σ_j a_j E_kj and e_k at the centroid q of this
// thread, with every thread of the block taking part in loading the tiles.
template <typename T, int D>
__device__ void gm_relu_sums(const T *mx, ll n, const T *q, T &t, T &e, T kappa, const GmReluFit<T> &f) {
	const int d = D;
	GmRelu<T> *tile = (GmRelu<T> *)gm_smem;
	ll s = 1 + d + d * d;
	t = 0;
	e = 0;
	for (ll j0 = 0; j0 < n; j0 += blockDim.x) {
		ll j = j0 + threadIdx.x;
		if (j < n) gm_relu_load(d, mx + j * s, tile[threadIdx.x], kappa, f);
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

// gm_relu_centroid computes t_k (κ and the given target included, in the
// CPU's order) and e_k at the position of this thread's centroid
// k = blockIdx.y·blockDim.x + threadIdx.x of mixture blockIdx.x (the grid of
// gm_relufit) and returns k. Every thread of the block must call it, also
// those with k ≥ n.
template <typename T, int D>
__device__ ll gm_relu_centroid(const T *x, ll n, T &t, T &e, T kappa, const GmReluFit<T> &f) {
	const ll d = D;
	ll k = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	const T *mx = x + (ll)blockIdx.x * n * s;
	T q[3] = {0, 0, 0};
	if (k < n)
		for (ll c = 0; c < d; c++) q[c] = mx[k * s + 1 + c];
	gm_relu_sums<T, D>(mx, n, q, t, e, kappa, f);
	if (kappa != 0) t += kappa;
	if (f.tg && k < n) t += f.tg[(ll)blockIdx.x * n + k];
	return k;
}

template <typename T, int D>
__device__ void gm_relufit_d(T *y, const T *x, ll n, const GmReluFit<T> f, double off) {
	const ll d = D;
	T t, e;
	const T kappa = f.constant(blockIdx.x);
	ll k = gm_relu_centroid<T, D>(x, n, t, e, kappa, f);
	if (k >= n) return;
	ll s = 1 + d + d * d;
	ll i = (ll)blockIdx.x * n + k;
	const T *g = x + i * s;
	T *o = y + i * s;
	T xk = gm_coarse(g[0], kappa, f.paper, f.coarse, f.floor_);
	T kp = kappa > 0 ? kappa : T(0);
	o[0] = xk * ((t > 0 ? t : T(0)) - kp + T(off)) / (e + T(off));
	for (ll c = 1; c < s; c++) o[c] = g[c];
}
template <typename T>
__device__ void gm_relufit(T *y, const T *x, const T *kappa, const T *tg, ll n, ll d, ll paper, double coarse, double floor_,
                           double off) {
	const GmReluFit<T> f{kappa, tg, paper, coarse, floor_};
	GM_BY_DIM(d, gm_relufit_d, y, x, n, f, off);
}
#define GM_RELU_PARAMS(T) \
	(T * y, const T *x, const T *kappa, const T *tg, ll n, ll d, ll paper, double coarse, double floor_, double off)
GM_EXPORT(gm_relufit, GM_RELU_PARAMS, (y, x, kappa, tg, n, d, paper, coarse, floor_, off))

// Backward pass 1, per centroid k (same grid as the forward): recompute t_k
// and e_k and store, in work [B·C·N·GM_RELU_WORK], ∂L/∂t_k, ∂L/∂e_k, the
// direct ∂L/∂x_k and ∂L/∂b_k: with r = (max(t,0)−κ⁺+off)/(e+off),
// ∂b = g x/(e+off), ∂t = ∂b·[t > 0], ∂e = −g x r/(e+off), ∂x = g r; and
// ∂L/∂t_k into dt for given targets (dt null: not wanted).
#define GM_RELU_WORK 5 // ∂t, ∂e, ∂x direct, ∂b, and the coarse weight's share of ∂κ (pass 2)
template <typename T, int D>
__device__ void gm_relufit_backward_point_d(T *work, T *dt, const T *x, const T *g, ll n, const GmReluFit<T> f, double off) {
	const ll d = D;
	T t, e;
	const T kappa = f.constant(blockIdx.x);
	ll k = gm_relu_centroid<T, D>(x, n, t, e, kappa, f);
	if (k >= n) return;
	ll s = 1 + d + d * d;
	ll i = (ll)blockIdx.x * n + k;
	T gk = g[i * s];
	T xk = gm_coarse(x[i * s], kappa, f.paper, f.coarse, f.floor_);
	T kp = kappa > 0 ? kappa : T(0);
	T den = e + T(off);
	T r = ((t > 0 ? t : T(0)) - kp + T(off)) / den;
	T gb = gk * xk / den;
	T *w = work + i * GM_RELU_WORK;
	w[0] = t > 0 ? gb : T(0);
	w[1] = -gk * xk * r / den;
	w[2] = gk * r;
	w[3] = gb;
	if (dt) dt[i] = w[0];
}
template <typename T>
__device__ void gm_relufit_backward_point(T *work, T *dt, const T *x, const T *kappa, const T *tg, const T *g, ll n, ll d,
                                          ll paper, double coarse, double floor_, double off) {
	const GmReluFit<T> f{kappa, tg, paper, coarse, floor_};
	GM_BY_DIM(d, gm_relufit_backward_point_d, work, dt, x, g, n, f, off);
}
#define GM_RELU_BP_PARAMS(T)                                                                                       \
	(T * work, T * dt, const T *x, const T *kappa, const T *tg, const T *g, ll n, ll d, ll paper, double coarse, \
	 double floor_, double off)
GM_EXPORT(gm_relufit_backward_point, GM_RELU_BP_PARAMS, (work, dt, x, kappa, tg, g, n, d, paper, coarse, floor_, off))

// gm_coarse_slopes is device.CoarseSlopes: ∂x/∂a into da and ∂x/∂κ into
// dk; 0 at the kinks.
template <typename T> __device__ void gm_coarse_slopes(T a, T kappa, T &da, T &dk) {
	da = dk = 0;
	if (a + kappa > 0 && a > 0)
		da = 1;
	else if (a + kappa > 0 && a < 0)
		da = -1;
	else if (!(a + kappa > 0) && kappa > 0)
		dk = 1;
}

// Backward pass 2, per component j (same grid): with G_kj = ∂t_k a_j + ∂e_k x_j
// (a_j taken as 0 for given targets), w_kj = G_kj E_kj and u_kj = A_j (μ_k − μ_j),
//
//	∂a_j = Σ_k ∂t_k E_kj + ∂x_j/∂a_j·(∂x_j + Σ_k ∂e_k E_kj)     (no first term for given targets)
//	∂μ_j = g_μj + Σ_k w_kj u_kj − Σ_i w_ji u_ji
//	∂Σ_j = g_Σj + ½ (Σ_k w_kj u_kj u_kjᵀ − (Σ_k w_kj) A_j)
//
// and, where x_j follows κ instead of a_j, the share ∂x_j + Σ_k ∂e_k E_kj
// of ∂L/∂κ into work (gm_relufit_backward_kappa sums it). The sums over k
// (j as the evaluated component) and over i (j as the evaluation point) each
// stream the other components through shared memory. With a run-time d this
// kernel kept U, UU and KQ in 152 bytes per thread of local memory.
template <typename T, int D>
__device__ void gm_relufit_backward_component_d(T *dx, const T *x, const T *g, T *work, ll n, const GmReluFit<T> f) {
	const ll d = D;
	GmRelu<T> *tile = (GmRelu<T> *)gm_smem;
	T *wtile = (T *)(tile + blockDim.x); // blockDim.x rows of (μ_k, ∂t_k, ∂e_k)
	ll mi = blockIdx.x;
	ll j = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	const int di = D;
	const T *mx = x + mi * n * s;
	T *wk = work + mi * n * GM_RELU_WORK;
	const T kappa = f.constant(mi);
	GmRelu<T> me;
	T gtj = 0, gej = 0, aj = 0;
	if (j < n) {
		gm_relu_load(di, mx + j * s, me, kappa, f);
		gtj = wk[j * GM_RELU_WORK];
		gej = wk[j * GM_RELU_WORK + 1];
		aj = f.tg ? T(0) : me.a;
	}
	T ga = 0, gx = 0, wsum = 0, U[3] = {0, 0, 0}, UU[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, KQ[3] = {0, 0, 0};
	for (ll k0 = 0; k0 < n; k0 += blockDim.x) {
		ll k = k0 + threadIdx.x;
		if (k < n) {
			gm_relu_load(di, mx + k * s, tile[threadIdx.x], kappa, f);
			T *row = wtile + threadIdx.x * (d + 2);
			for (ll c = 0; c < d; c++) row[c] = mx[k * s + 1 + c];
			row[d] = wk[k * GM_RELU_WORK];
			row[d + 1] = wk[k * GM_RELU_WORK + 1];
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
				T w = et * aj + ee * me.x;
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
	T da, dk;
	gm_coarse_slopes(me.a, kappa, da, dk);
	T gc = wk[j * GM_RELU_WORK + 2] + gx; // ∂L/∂x_j
	o[0] = (f.tg ? T(0) : ga) + (da != 0 ? da * gc : T(0));
	wk[j * GM_RELU_WORK + 4] = da == 0 && dk != 0 ? gc : T(0);
	for (int c = 0; c < di; c++) o[1 + c] = gj[1 + c] + U[c] - KQ[c];
	for (int e = 0; e < di * di; e++) o[1 + d + e] = gj[1 + d + e] + T(0.5) * (UU[e] - wsum * me.inv[e]);
}
template <typename T>
__device__ void gm_relufit_backward_component(T *dx, const T *x, const T *kappa, const T *tg, const T *g, T *work, ll n, ll d,
                                              ll paper, double coarse, double floor_) {
	const GmReluFit<T> f{kappa, tg, paper, coarse, floor_};
	GM_BY_DIM(d, gm_relufit_backward_component_d, dx, x, g, work, n, f);
}
#define GM_RELU_BC_PARAMS(T)                                                                                          \
	(T * dx, const T *x, const T *kappa, const T *tg, const T *g, T *work, ll n, ll d, ll paper, double coarse, \
	 double floor_)
GM_EXPORT(gm_relufit_backward_component, GM_RELU_BC_PARAMS, (dx, x, kappa, tg, g, work, n, d, paper, coarse, floor_))

// Backward pass 3, one thread per mixture m < mixtures (kappa null: κ = 0): ∂L/∂κ_m =
// Σ_k (∂t_k − [κ > 0]·∂b_k) + Σ_j (the coarse weights' share), each sum in
// index order as ops/cpu sums it.
template <typename T>
__device__ void gm_relufit_backward_kappa(T *dkappa, const T *kappa, const T *work, ll mixtures, ll n) {
	ll m = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (m >= mixtures) return;
	const T *w = work + m * n * GM_RELU_WORK;
	bool pos = kappa && kappa[m] > 0; // κ⁺ > 0
	T dk = 0, dc = 0;
	for (ll k = 0; k < n; k++) {
		dk += w[k * GM_RELU_WORK];
		if (pos) dk -= w[k * GM_RELU_WORK + 3];
	}
	for (ll j = 0; j < n; j++) dc += w[j * GM_RELU_WORK + 4];
	dkappa[m] = dk + dc;
}
#define GM_RELU_BK_PARAMS(T) (T * dkappa, const T *kappa, const T *work, ll mixtures, ll n)
GM_EXPORT(gm_relufit_backward_kappa, GM_RELU_BK_PARAMS, (dkappa, kappa, work, mixtures, n))
