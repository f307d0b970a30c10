// evaluate.cu: gm.Evaluate, the values of mixtures [B, C, N, S] at point
// sets [pb, pc, m, D] (broadcast where pb or pc is 1), and its gradients
// (ops/cpu/evaluate.go):
//
//	y[b,c,i] = Σ_k w_k·(2π)^(−D/2)·det(Σ_k)^(−½)·exp(−½ (p_i−μ_k)ᵀ Σ_k⁻¹ (p_i−μ_k)).
//
// The O(m·N) work per mixture is tiled: a block of threads owns a block of
// points (or components), and the other operand streams through shared
// memory one tile at a time, prepared (inverted) once per tile by the thread
// that loads it. The kernels expect blockDim.x threads and
// blockDim.x·sizeof(GmPrep<T>) bytes of dynamic shared memory. Each is
// compiled per dimension (the _d templates): with a run-time d its loops
// over the point and accumulator arrays cannot be unrolled, and the
// compiler keeps those arrays in local memory.
#include "gm.cuh"

// Forward: grid (B·C, ⌈m/blockDim⌉); thread = point i of mixture blockIdx.x.
template <typename T, int D>
__device__ void gm_evaluate_d(T *y, const T *x, const T *pts, ll C, ll n, ll pb, ll pc, ll m) {
	const ll d = D;
	GmPrep<T> *tile = (GmPrep<T> *)gm_smem;
	ll mi = blockIdx.x;
	ll i = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	const T *mx = x + mi * n * s;
	const T *p = pts + gm_point_set(mi / C, mi % C, pb, pc) * m * d;
	T q[3] = {0, 0, 0};
	if (i < m)
		for (ll j = 0; j < d; j++) q[j] = p[i * d + j];
	T sum = 0;
	for (ll k0 = 0; k0 < n; k0 += blockDim.x) {
		ll k = k0 + threadIdx.x;
		if (k < n) gm_prepare((int)d, mx + k * s, tile[threadIdx.x]);
		__syncthreads();
		ll kn = min((ll)blockDim.x, n - k0);
		for (ll t = 0; t < kn; t++) {
			const GmPrep<T> &g = tile[t];
			T v[3];
			for (ll j = 0; j < d; j++) v[j] = q[j] - g.mu[j];
			sum += g.coef * gm_exp(T(-0.5) * gm_quad((int)d, g.a, v));
		}
		__syncthreads();
	}
	if (i < m) y[mi * m + i] = sum;
}
template <typename T>
__device__ void gm_evaluate(T *y, const T *x, const T *pts, ll C, ll n, ll d, ll pb, ll pc, ll m) {
	GM_BY_DIM(d, gm_evaluate_d, y, x, pts, C, n, pb, pc, m);
}
#define GM_EVAL_PARAMS(T) (T * y, const T *x, const T *pts, ll C, ll n, ll d, ll pb, ll pc, ll m)
GM_EXPORT(gm_evaluate, GM_EVAL_PARAMS, (y, x, pts, C, n, d, pb, pc, m))

// ∂L/∂mixture: grid (B·C, ⌈N/blockDim⌉); thread = component k, the points and
// their incoming gradients stream through shared memory. With u = A t,
// e = exp(−½ tᵀAt), f = coef·e:
// ∂w = norm Σ g e, ∂μ = Σ g f u, ∂Σ = ½ (Σ g f u uᵀ − (Σ g f) A).
template <typename T, int D>
__device__ void gm_evaluate_backward_mixture_d(T *dx, const T *x, const T *pts, const T *g, ll C, ll n, ll pb, ll pc, ll m) {
	const ll d = D;
	T *tile = (T *)gm_smem; // blockDim.x rows of (p_0..p_{d−1}, g)
	ll mi = blockIdx.x;
	ll k = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	const T *p = pts + gm_point_set(mi / C, mi % C, pb, pc) * m * d;
	const T *gm = g + mi * m;
	GmPrep<T> pk;
	if (k < n) gm_prepare((int)d, x + (mi * n + k) * s, pk);
	T sge = 0, sgf = 0, su[3] = {0, 0, 0}, suu[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
	for (ll i0 = 0; i0 < m; i0 += blockDim.x) {
		ll i = i0 + threadIdx.x;
		if (i < m) {
			for (ll j = 0; j < d; j++) tile[threadIdx.x * (d + 1) + j] = p[i * d + j];
			tile[threadIdx.x * (d + 1) + d] = gm[i];
		}
		__syncthreads();
		ll in = min((ll)blockDim.x, m - i0);
		if (k < n)
			for (ll t = 0; t < in; t++) {
				const T *row = tile + t * (d + 1);
				T v[3], u[3];
				T qf = gm_offset_form((int)d, pk.a, row, pk.mu, v, u);
				T ge = row[d] * gm_exp(T(-0.5) * qf);
				T gf = pk.coef * ge;
				sge += ge;
				sgf += gf;
				for (ll r = 0; r < d; r++) {
					su[r] += gf * u[r];
					for (ll c = 0; c < d; c++) suu[r * d + c] += gf * u[r] * u[c];
				}
			}
		__syncthreads();
	}
	if (k >= n) return;
	T *dg = dx + (mi * n + k) * s;
	dg[0] = pk.norm * sge;
	for (ll j = 0; j < d; j++) dg[1 + j] = su[j];
	for (ll j = 0; j < d * d; j++) dg[1 + d + j] = T(0.5) * (suu[j] - sgf * pk.a[j]);
}
template <typename T>
__device__ void gm_evaluate_backward_mixture(T *dx, const T *x, const T *pts, const T *g, ll C, ll n, ll d, ll pb, ll pc, ll m) {
	GM_BY_DIM(d, gm_evaluate_backward_mixture_d, dx, x, pts, g, C, n, pb, pc, m);
}
#define GM_EVAL_BM_PARAMS(T) (T * dx, const T *x, const T *pts, const T *g, ll C, ll n, ll d, ll pb, ll pc, ll m)
GM_EXPORT(gm_evaluate_backward_mixture, GM_EVAL_BM_PARAMS, (dx, x, pts, g, C, n, d, pb, pc, m))

// ∂L/∂points: grid (pb·pc, ⌈m/blockDim⌉); thread = point i of a point set. It
// owns the sum over every mixture that reads the set (the broadcast
// dimensions) and every component, so no atomics are needed:
// ∂p_i = −Σ_{(b,c)} g[b,c,i] Σ_k f_k(p_i) A_k (p_i − μ_k).
template <typename T, int D>
__device__ void gm_evaluate_backward_points_d(T *dp, const T *x, const T *pts, const T *g, ll B, ll C, ll n, ll pb, ll pc, ll m) {
	const ll d = D;
	GmPrep<T> *tile = (GmPrep<T> *)gm_smem;
	ll set = blockIdx.x;
	ll i = (ll)blockIdx.y * blockDim.x + threadIdx.x;
	ll s = 1 + d + d * d;
	ll bs = B / pb, cs = C / pc;
	ll b0 = (set / pc) * bs, c0 = (set % pc) * cs;
	T q[3] = {0, 0, 0}, acc[3] = {0, 0, 0};
	if (i < m)
		for (ll j = 0; j < d; j++) q[j] = pts[(set * m + i) * d + j];
	for (ll b = b0; b < b0 + bs; b++)
		for (ll c = c0; c < c0 + cs; c++) {
			ll mi = b * C + c;
			const T *mx = x + mi * n * s;
			T gi = i < m ? g[mi * m + i] : T(0);
			T part[3] = {0, 0, 0};
			for (ll k0 = 0; k0 < n; k0 += blockDim.x) {
				ll k = k0 + threadIdx.x;
				if (k < n) gm_prepare((int)d, mx + k * s, tile[threadIdx.x]);
				__syncthreads();
				ll kn = min((ll)blockDim.x, n - k0);
				for (ll t = 0; t < kn; t++) {
					const GmPrep<T> &pk = tile[t];
					T v[3], u[3];
					for (ll j = 0; j < d; j++) v[j] = q[j] - pk.mu[j];
					gm_matvec((int)d, pk.a, v, u);
					T qf = 0;
					for (ll j = 0; j < d; j++) qf += v[j] * u[j];
					T f = pk.coef * gm_exp(T(-0.5) * qf);
					for (ll j = 0; j < d; j++) part[j] += f * u[j];
				}
				__syncthreads();
			}
			for (ll j = 0; j < d; j++) acc[j] -= gi * part[j];
		}
	if (i < m)
		for (ll j = 0; j < d; j++) dp[(set * m + i) * d + j] = acc[j];
}
template <typename T>
__device__ void gm_evaluate_backward_points(T *dp, const T *x, const T *pts, const T *g, ll B, ll C, ll n, ll d, ll pb, ll pc, ll m) {
	GM_BY_DIM(d, gm_evaluate_backward_points_d, dp, x, pts, g, B, C, n, pb, pc, m);
}
#define GM_EVAL_BP_PARAMS(T) (T * dp, const T *x, const T *pts, const T *g, ll B, ll C, ll n, ll d, ll pb, ll pc, ll m)
GM_EXPORT(gm_evaluate_backward_points, GM_EVAL_BP_PARAMS, (dp, x, pts, g, B, C, n, d, pb, pc, m))
