// targets.cu: the glue of a fused block's exact targets on the device
// (block_gmcuda.go). The targets are the block's convolution evaluated at
// the fitted mixture's positions (gm_evaluate with one point set per
// mixture); these kernels hand those positions to the evaluation and its
// gradients back to the fit and the convolution. One thread per value.
#include "gm.cuh"

// gm_positions writes p [count, d], the positions of the count packed
// Gaussians of x (stride s), as the point sets gm_evaluate reads.
template <typename T> __device__ void gm_positions(T *p, const T *x, ll count, ll d, ll s) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= count * d) return;
	p[e] = x[e / d * s + 1 + e % d];
}
#define GM_POSITIONS_PARAMS(T) (T * p, const T *x, ll count, ll d, ll s)
GM_EXPORT(gm_positions, GM_POSITIONS_PARAMS, (p, x, count, d, s))

// gm_add_positions adds dp [count, d], the gradient of gm_positions'
// points, to the positions' part of dx (count packed Gaussians, stride s).
template <typename T> __device__ void gm_add_positions(T *dx, const T *dp, ll count, ll d, ll s) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= count * d) return;
	dx[e / d * s + 1 + e % d] += dp[e];
}
#define GM_ADD_POSITIONS_PARAMS(T) (T * dx, const T *dp, ll count, ll d, ll s)
GM_EXPORT(gm_add_positions, GM_ADD_POSITIONS_PARAMS, (dx, dp, count, d, s))

// gm_add adds the n values of x to y.
template <typename T> __device__ void gm_add(T *y, const T *x, ll n) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (e < n) y[e] += x[e];
}
#define GM_ADD_PARAMS(T) (T * y, const T *x, ll n)
GM_EXPORT(gm_add, GM_ADD_PARAMS, (y, x, n))
