// conv.cu: gm.Conv, the analytic convolution of data [B, Fi, Ni, S] with
// kernels [Fo, Fi, Nk, S] into [B, Fo, Fi·Ni·Nk, S], and its gradients.
// Output component n = i + Ni·(c + Fi·j) of mixture (b, o) is
// w = w_x[b,c,i]·w_k[o,c,j], μ = μ_x + μ_k, Σ = Σ_x + Σ_k (ops/cpu/conv.go).
#include "gm.cuh"

// One thread per output value (not per Gaussian): neighbouring threads write
// neighbouring addresses and read neighbouring data values.
template <typename T>
__device__ void gm_conv(T *y, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll s) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	ll no = fi * ni * nk;
	if (e >= B * fo * no * s) return;
	ll f = e % s, g = e / s;
	ll n = g % no, bo = g / no;
	ll o = bo % fo, b = bo / fo;
	ll i = n % ni, c = (n / ni) % fi, j = n / (ni * fi);
	T xv = x[((b * fi + c) * ni + i) * s + f];
	T kv = k[((o * fi + c) * nk + j) * s + f];
	y[e] = f == 0 ? xv * kv : xv + kv;
}
#define GM_CONV_PARAMS(T) (T * y, const T *x, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll s)
GM_EXPORT(gm_conv, GM_CONV_PARAMS, (y, x, k, B, fi, ni, fo, nk, s))

// One thread per data value (b, c, i, f): it owns its sum over the output
// channels o and kernel components j, so no atomics are needed:
// ∂w_x = Σ g_w·w_k, ∂μ_x = Σ g_μ, ∂Σ_x = Σ g_Σ.
template <typename T>
__device__ void gm_conv_backward_data(T *dx, const T *g, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll s) {
	ll e = (ll)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= B * fi * ni * s) return;
	ll f = e % s, gi = e / s;
	ll i = gi % ni, bc = gi / ni;
	ll c = bc % fi, b = bc / fi;
	ll no = fi * ni * nk;
	T sum = 0;
	for (ll o = 0; o < fo; o++) {
		const T *gm = g + (b * fo + o) * no * s;
		for (ll j = 0; j < nk; j++) {
			T gv = gm[(i + ni * (c + fi * j)) * s + f];
			sum += f == 0 ? gv * k[((o * fi + c) * nk + j) * s] : gv;
		}
	}
	dx[e] = sum;
}
#define GM_CONV_BD_PARAMS(T) (T * dx, const T *g, const T *k, ll B, ll fi, ll ni, ll fo, ll nk, ll s)
GM_EXPORT(gm_conv_backward_data, GM_CONV_BD_PARAMS, (dx, g, k, B, fi, ni, fo, nk, s))

// One block per kernel Gaussian (o, c, j): its gradient sums over every batch
// entry b and data component i (B·Ni terms, typically hundreds), so the
// block's threads split those terms and meet in a shared-memory reduction.
// ∂w_k = Σ g_w·w_x, ∂μ_k = Σ g_μ, ∂Σ_k = Σ g_Σ. Block size: a power of two.
template <typename T>
__device__ void gm_conv_backward_kernels(T *dk, const T *g, const T *x, ll B, ll fi, ll ni, ll fo, ll nk, ll s) {
	ll kg = blockIdx.x; // (o·Fi + c)·Nk + j
	ll j = kg % nk, oc = kg / nk;
	ll c = oc % fi, o = oc / fi;
	ll no = fi * ni * nk;
	T acc[13];
	for (int f = 0; f < s; f++) acc[f] = 0;
	for (ll t = threadIdx.x; t < B * ni; t += blockDim.x) {
		ll b = t / ni, i = t % ni;
		const T *gv = g + ((b * fo + o) * no + i + ni * (c + fi * j)) * s;
		acc[0] += gv[0] * x[((b * fi + c) * ni + i) * s];
		for (int f = 1; f < s; f++) acc[f] += gv[f];
	}
	T *red = (T *)gm_smem; // blockDim.x values
	for (int f = 0; f < s; f++) {
		red[threadIdx.x] = acc[f];
		__syncthreads();
		for (int h = blockDim.x / 2; h > 0; h /= 2) {
			if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
			__syncthreads();
		}
		if (threadIdx.x == 0) dk[kg * s + f] = red[0];
		__syncthreads();
	}
}
#define GM_CONV_BK_PARAMS(T) (T * dk, const T *g, const T *x, ll B, ll fi, ll ni, ll fo, ll nk, ll s)
GM_EXPORT(gm_conv_backward_kernels, GM_CONV_BK_PARAMS, (dk, g, x, B, fi, ni, fo, nk, s))
