// kernel.cu: assembly of a convolution layer's packed kernels from its raw
// learnable tensors, and the gradients (ops/cpu/kernel.go):
// weight = w·sd + mean, position = r·p, Σ = (r/3)²·(A·Aᵀ + ε·I).
#include "gm.cuh"

template <typename T> __device__ void gm_gram(int d, const T *a, T *out) {
	for (int i = 0; i < d; i++)
		for (int j = 0; j < d; j++) {
			T s = 0;
			for (int k = 0; k < d; k++) s += a[i * d + k] * a[j * d + k];
			out[i * d + j] = s;
		}
}

// max |A·Aᵀ| over all factors: a block reduction, then one atomicMax per
// block on the bit pattern of the (non-negative) double, which orders like
// the value. *out must start at 0.
template <typename T> __device__ void gm_kernel_gram_max(unsigned long long *out, const T *a, ll count, ll d) {
	ll i = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	double mx = 0;
	if (i < count) {
		T m[9];
		gm_gram((int)d, a + i * d * d, m);
		for (int e = 0; e < d * d; e++) mx = fmax(mx, fabs((double)m[e]));
	}
	double *red = (double *)gm_smem;
	red[threadIdx.x] = mx;
	__syncthreads();
	for (int h = blockDim.x / 2; h > 0; h /= 2) {
		if (threadIdx.x < h) red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + h]);
		__syncthreads();
	}
	if (threadIdx.x == 0) atomicMax(out, (unsigned long long)__double_as_longlong(red[0]));
}
#define GM_GRAM_MAX_PARAMS(T) (unsigned long long *out, const T *a, ll count, ll d)
GM_EXPORT(gm_kernel_gram_max, GM_GRAM_MAX_PARAMS, (out, a, count, d))

// One thread per kernel Gaussian.
template <typename T>
__device__ void gm_assemble_kernel(T *out, const T *w, const T *p, const T *a, ll count, ll d, double sd, double mean, double r, double eps) {
	ll i = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= count) return;
	ll s = 1 + d + d * d;
	T cr = T((r / 3) * (r / 3));
	T *g = out + i * s;
	g[0] = w[i] * T(sd) + T(mean);
	for (ll j = 0; j < d; j++) g[1 + j] = T(r) * p[i * d + j];
	T *cov = g + 1 + d;
	gm_gram((int)d, a + i * d * d, cov);
	for (ll j = 0; j < d * d; j++) cov[j] *= cr;
	for (ll j = 0; j < d; j++) cov[j * (d + 1)] += cr * T(eps);
}
#define GM_ASSEMBLE_PARAMS(T) (T * out, const T *w, const T *p, const T *a, ll count, ll d, double sd, double mean, double r, double eps)
GM_EXPORT(gm_assemble_kernel, GM_ASSEMBLE_PARAMS, (out, w, p, a, count, d, sd, mean, r, eps))

// One thread per kernel Gaussian writes all three raw gradients:
// ∂w = sd·g_w, ∂p = r·g_μ, ∂A = (r/3)²·(G + Gᵀ)·A with G = g_Σ (ε is detached).
template <typename T>
__device__ void gm_assemble_kernel_backward(T *dw, T *dp, T *da, const T *g, const T *a, ll count, ll d, double sd, double r) {
	ll i = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= count) return;
	ll s = 1 + d + d * d;
	const T *gi = g + i * s;
	dw[i] = T(sd) * gi[0];
	for (ll j = 0; j < d; j++) dp[i * d + j] = T(r) * gi[1 + j];
	const T *gc = gi + 1 + d, *ai = a + i * d * d;
	T cr = T((r / 3) * (r / 3));
	for (ll row = 0; row < d; row++)
		for (ll col = 0; col < d; col++) {
			T acc = 0;
			for (ll k = 0; k < d; k++) acc += (gc[row * d + k] + gc[k * d + row]) * ai[k * d + col];
			da[i * d * d + row * d + col] = cr * acc;
		}
}
#define GM_ASSEMBLE_BW_PARAMS(T) (T * dw, T *dp, T *da, const T *g, const T *a, ll count, ll d, double sd, double r)
GM_EXPORT(gm_assemble_kernel_backward, GM_ASSEMBLE_BW_PARAMS, (dw, dp, da, g, a, count, d, sd, r))
