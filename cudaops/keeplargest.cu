// keeplargest.cu: gm.KeepLargest (ops/cpu/keeplargest.go), the np components
// of largest weight of every mixture, largest first and earlier first on
// ties (a stable sort by descending weight), and its gradient.
#include "gm.cuh"

// kl_rank returns the place of component k (weight wk) of the mixture mx
// in that order, rank = #{j : w_j > w_k} + #{j < k : w_j = w_k}, with every
// thread of the block taking part: the weights stream through shared memory
// in tiles of blockDim.x. Ranks are distinct, so each kept component has its
// own output slot and no two threads write the same place.
template <typename T> __device__ ll kl_rank(const T *mx, ll n, ll s, ll k, T wk) {
	T *tile = (T *)gm_smem;
	ll rank = 0;
	for (ll t0 = 0; t0 < n; t0 += blockDim.x) {
		__syncthreads(); // the previous tile is done with
		if (t0 + threadIdx.x < n) tile[threadIdx.x] = mx[(t0 + threadIdx.x) * s];
		__syncthreads();
		ll tn = min((ll)blockDim.x, n - t0);
		if (k < n)
			for (ll j = 0; j < tn; j++) rank += tile[j] > wk || (tile[j] == wk && t0 + j < k);
	}
	return rank;
}

// kl_ranked calls f(k, rank) for every component k of mixture m, each
// thread for the components k ≡ threadIdx.x.
template <typename T, typename F> __device__ void kl_ranked(const T *mx, ll n, ll s, F f) {
	for (ll base = 0; base < n; base += blockDim.x) {
		ll k = base + threadIdx.x;
		T wk = k < n ? mx[k * s] : T(0);
		ll r = kl_rank(mx, n, s, k, wk);
		if (k < n) f(k, r);
	}
}

// One block per mixture; the kept components are copied to their slots.
template <typename T> __device__ void gm_keep_largest(T *y, const T *x, ll n, ll s, ll np) {
	const ll m = blockIdx.x;
	const T *mx = x + m * n * s;
	kl_ranked(mx, n, s, [&](ll k, ll r) {
		if (r < np)
			for (ll e = 0; e < s; e++) y[(m * np + r) * s + e] = mx[k * s + e];
	});
}
#define GM_KEEP_LARGEST_PARAMS(T) (T * y, const T *x, ll n, ll s, ll np)
GM_EXPORT(gm_keep_largest, GM_KEEP_LARGEST_PARAMS, (y, x, n, s, np))

// The gradient: a kept component receives the gradient of its slot, every
// other component 0.
template <typename T> __device__ void gm_keep_largest_backward(T *dx, const T *x, const T *g, ll n, ll s, ll np) {
	const ll m = blockIdx.x;
	const T *mx = x + m * n * s;
	kl_ranked(mx, n, s, [&](ll k, ll r) {
		for (ll e = 0; e < s; e++) dx[(m * n + k) * s + e] = r < np ? g[(m * np + r) * s + e] : T(0);
	});
}
#define GM_KEEP_LARGEST_BW_PARAMS(T) (T * dx, const T *x, const T *g, ll n, ll s, ll np)
GM_EXPORT(gm_keep_largest_backward, GM_KEEP_LARGEST_BW_PARAMS, (dx, x, g, n, s, np))
