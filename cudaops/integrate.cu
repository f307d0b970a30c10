// integrate.cu: gm.Integrate, y[b,c] = Σ_k w[b,c,k], and its gradient.
#include "gm.cuh"

// One warp per mixture: the lanes stride over the components and the partial
// sums meet in a shuffle reduction, so a mixture's weights are read by 32
// threads at once instead of one.
template <typename T> __device__ void gm_integrate(T *y, const T *x, ll mixtures, ll n, ll s) {
	ll m = (ll)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (m >= mixtures) return;
	const T *mx = x + m * n * s;
	T sum = 0;
	for (ll k = lane; k < n; k += 32) sum += mx[k * s];
	for (int o = 16; o > 0; o /= 2) sum += __shfl_down_sync(0xffffffffu, sum, o);
	if (lane == 0) y[m] = sum;
}
#define GM_INTEGRATE_PARAMS(T) (T * y, const T *x, ll mixtures, ll n, ll s)
GM_EXPORT(gm_integrate, GM_INTEGRATE_PARAMS, (y, x, mixtures, n, s))

// One thread per packed value: ∂L/∂w[b,c,k] = g[b,c], zero elsewhere.
template <typename T> __device__ void gm_integrate_backward(T *dx, const T *g, ll total, ll n, ll s) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= total) return;
	dx[e] = e % s == 0 ? g[e / (n * s)] : T(0);
}
#define GM_INTEGRATE_BACKWARD_PARAMS(T) (T * dx, const T *g, ll total, ll n, ll s)
GM_EXPORT(gm_integrate_backward, GM_INTEGRATE_BACKWARD_PARAMS, (dx, g, total, n, s))
