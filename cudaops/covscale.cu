// covscale.cu: CovScaleNorm, the spatial scaling μ ← s·μ, Σ ← s²·Σ per
// mixture, its mean-trace statistic and its gradients (ops/cpu/covscale.go).
#include "gm.cuh"

// One warp per mixture; the traces are summed in double, as on the CPU, so
// float32 batches of thousands of components keep the statistic accurate.
template <typename T> __device__ void gm_mean_traces(double *tau, const T *x, ll mixtures, ll n, ll d) {
	ll m = (ll)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (m >= mixtures) return;
	ll s = 1 + d + d * d;
	const T *mx = x + m * n * s;
	double sum = 0;
	for (ll k = lane; k < n; k += 32)
		for (ll j = 0; j < d; j++) sum += (double)mx[k * s + 1 + d + j * (d + 1)];
	for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
	if (lane == 0) tau[m] = sum / (double)n;
}
#define GM_MEAN_TRACES_PARAMS(T) (double *tau, const T *x, ll mixtures, ll n, ll d)
GM_EXPORT(gm_mean_traces, GM_MEAN_TRACES_PARAMS, (tau, x, mixtures, n, d))

// One thread per packed value: weights stay, positions ×s, covariances ×s².
// The detached backward is the same map applied to the incoming gradient.
template <typename T> __device__ void gm_scale_mixtures(T *y, const T *x, const T *sc, ll total, ll n, ll d) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= total) return;
	ll s = 1 + d + d * d;
	ll f = e % s;
	T v = sc[e / (n * s)];
	y[e] = f == 0 ? x[e] : f <= d ? v * x[e] : v * v * x[e];
}
#define GM_SCALE_PARAMS(T) (T * y, const T *x, const T *sc, ll total, ll n, ll d)
GM_EXPORT(gm_scale_mixtures, GM_SCALE_PARAMS, (y, x, sc, total, n, d))

// The per-sample backward including the path through s = sqrt(D/τ): one warp
// per mixture reduces ∂L/∂s = Σ g_μ·μ and ∂L/∂s² = Σ ⟨g_Σ, Σ⟩ (in double),
// then its lanes write the gradient
// ∂L/∂Σ_k = s²·g_Σk + (∂L/∂τ / N)·I with ∂L/∂τ = −(∂L/∂s·s/2 + ∂L/∂s²·s²)/τ.
template <typename T>
__device__ void gm_cov_scale_backward(T *dx, const T *g, const T *x, const T *sc, const double *tau, ll mixtures, ll n, ll d) {
	ll m = (ll)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (m >= mixtures) return;
	ll s = 1 + d + d * d;
	const T *src = x + m * n * s, *gm = g + m * n * s;
	T *dst = dx + m * n * s;
	double ds = 0, ds2 = 0;
	for (ll k = lane; k < n; k += 32) {
		for (ll j = 1; j <= d; j++) ds += (double)gm[k * s + j] * (double)src[k * s + j];
		for (ll j = 1 + d; j < s; j++) ds2 += (double)gm[k * s + j] * (double)src[k * s + j];
	}
	for (int o = 16; o > 0; o /= 2) {
		ds += __shfl_xor_sync(0xffffffffu, ds, o);
		ds2 += __shfl_xor_sync(0xffffffffu, ds2, o);
	}
	double f = (double)sc[m];
	double dtau = -(ds * f / 2 + ds2 * f * f) / tau[m];
	T diag = T(dtau / (double)n), fs = T(f), f2 = T(f * f);
	for (ll k = lane; k < n; k += 32) {
		dst[k * s] = gm[k * s];
		for (ll j = 1; j <= d; j++) dst[k * s + j] = fs * gm[k * s + j];
		for (ll j = 1 + d; j < s; j++) dst[k * s + j] = f2 * gm[k * s + j];
		for (ll j = 0; j < d; j++) dst[k * s + 1 + d + j * (d + 1)] += diag;
	}
}
#define GM_CSB_PARAMS(T) (T * dx, const T *g, const T *x, const T *sc, const double *tau, ll mixtures, ll n, ll d)
GM_EXPORT(gm_cov_scale_backward, GM_CSB_PARAMS, (dx, g, x, sc, tau, mixtures, n, d))

// gm_scale_weights writes y, the count packed values of x (stride s) with
// every weight multiplied by f and the rest copied (ScaleWeights; y may be
// x). It is the ÷Fi inside a GMCN block (block_gmcuda.go).
template <typename T> __device__ void gm_scale_weights(T *y, const T *x, ll count, ll s, double f) {
	ll i = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= count) return;
	T v = x[i];
	y[i] = i % s == 0 ? v * (T)f : v;
}
#define GM_SW_PARAMS(T) (T * y, const T *x, ll count, ll s, double f)
GM_EXPORT(gm_scale_weights, GM_SW_PARAMS, (y, x, count, s, f))
