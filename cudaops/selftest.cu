// selftest.cu: kernels that only the tests launch, to check that a device
// (a GPU or the emulator) has the CUDA semantics the GM kernels rely on:
// warp shuffles and votes, shared-memory barriers, atomics; and, on the
// emulator only, that what CUDA leaves undefined fails the launch.
#include "gm.cuh"

// Each thread i writes six results of warp collectives on v_i = 3i + 1 to
// out[6i …]: shuffle down by 3, xor 5, up by 2, from lane 7, the ballot of
// i % 3 == 0 (as T) and shuffle down by 1 within segments of 8 lanes.
template <typename T> __device__ void gm_test_warp(T *out) {
	ll i = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	T v = T(3 * i + 1);
	T *o = out + i * 6;
	o[0] = __shfl_down_sync(0xffffffffu, v, 3);
	o[1] = __shfl_xor_sync(0xffffffffu, v, 5);
	o[2] = __shfl_up_sync(0xffffffffu, v, 2);
	o[3] = __shfl_sync(0xffffffffu, v, 7);
	o[4] = T(__ballot_sync(0xffffffffu, i % 3 == 0));
	o[5] = __shfl_down_sync(0xffffffffu, v, 1, 8);
}
#define GM_TEST_WARP_PARAMS(T) (T * out)
GM_EXPORT(gm_test_warp, GM_TEST_WARP_PARAMS, (out))

// One block sums x[0 … n) in dynamic shared memory (blockDim.x values) and
// every thread adds 1 to count with an atomic.
template <typename T> __device__ void gm_test_sum(T *sum, T *count, const T *x, ll n) {
	T *red = (T *)gm_smem;
	T acc = 0;
	for (ll i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
	red[threadIdx.x] = acc;
	__syncthreads();
	for (int h = blockDim.x / 2; h > 0; h /= 2) {
		if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
		__syncthreads();
	}
	if (threadIdx.x == 0) sum[blockIdx.x] = red[0];
	atomicAdd(count, T(1));
}
#define GM_TEST_SUM_PARAMS(T) (T * sum, T *count, const T *x, ll n)
GM_EXPORT(gm_test_sum, GM_TEST_SUM_PARAMS, (sum, count, x, n))

// Undefined behaviour the emulator reports, selected by what: 0 a barrier in
// divergent code (odd threads at __syncthreads, even ones at __syncwarp),
// 1 a full-mask shuffle after the upper half-warp has exited, 2 a read of
// shared memory no thread wrote (the emulator's NaN). Never launched on a GPU.
template <typename T> __device__ void gm_test_undefined(T *out, ll what) {
	T *sh = (T *)gm_smem;
	if (what == 0) {
		if (threadIdx.x % 2) __syncthreads();
		else __syncwarp();
	} else if (what == 1) {
		if (threadIdx.x % 32 >= 16) return;
		out[threadIdx.x] = __shfl_down_sync(0xffffffffu, T(threadIdx.x), 1);
	} else {
		out[threadIdx.x] = sh[threadIdx.x];
	}
}
#define GM_TEST_UNDEFINED_PARAMS(T) (T * out, ll what)
GM_EXPORT(gm_test_undefined, GM_TEST_UNDEFINED_PARAMS, (out, what))
