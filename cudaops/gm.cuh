// gm.cuh: device helpers shared by the GM kernels.
//
// Every kernel is a template over the element type T (float or double) and
// is instantiated twice with extern "C" names <kernel>_f32 and <kernel>_f64,
// so the Go launchers find them by name. Every kernel parameter is 8 bytes
// wide (pointers, long long, double): gorgonia.org/cu copies each parameter
// as 8 bytes.
//
// Packed layout (ops/mixture): a mixture is N Gaussians of stride
// S = 1 + D + D*D: [weight, position(D), covariance (D×D row-major)].
#pragma once

typedef long long ll;

typedef unsigned long long ull;

// gm_expand_bits spreads the low 10 bits of v so that two zero bits follow
// each: bit i moves to bit 3i (expandBits in ops/cpu/morton.go).
__device__ __forceinline__ unsigned gm_expand_bits(unsigned v) {
	v = (v * 0x00010001u) & 0xFF0000FFu;
	v = (v * 0x00000101u) & 0x0F00F00Fu;
	v = (v * 0x00000011u) & 0xC30C30C3u;
	v = (v * 0x00000005u) & 0x49249249u;
	return v;
}

// gm_box_scales writes the per-axis factors 1/extent of the bounding box
// [lower, upper] that gm_morton_cell takes, 0 for an axis without extent
// (all of it maps to cell 0), as newMortonBox in ops/cpu/morton.go.
__device__ __forceinline__ void gm_box_scales(int d, const double *lower, const double *upper, double *scale) {
	for (int a = 0; a < 3; a++) scale[a] = 0;
	for (int a = 0; a < d; a++) {
		double ext = upper[a] - lower[a];
		if (ext > 0) scale[a] = 1 / ext;
	}
}

// gm_morton_cell returns coordinate p normalised to its axis of the box
// (lower, scale from gm_box_scales) and quantised to [0, 1023], with the CPU's
// float64 operations (mortonBox.quantise), spread for interleaving by
// gm_expand_bits.
__device__ __forceinline__ unsigned gm_morton_cell(double p, double lower, double scale) {
	double u = (p - lower) * scale * 1024;
	unsigned q = u >= 1023 ? 1023u : u > 0 ? (unsigned)(int)u & 1023u : 0u;
	return gm_expand_bits(q);
}

// gm_block_sort sorts the P keys (P a power of two) ascending with the
// whole block, by a bitonic network; each compared pair belongs to the
// thread of its lower index. Every thread calls it after a barrier that
// follows the writes of the keys; they are sorted when it returns.
__device__ __forceinline__ void gm_block_sort(ull *keys, ll P) {
	const ll tid = threadIdx.x, bd = blockDim.x;
	for (ll kk = 2; kk <= P; kk <<= 1)
		for (ll jj = kk >> 1; jj > 0; jj >>= 1) {
			for (ll i = tid; i < P; i += bd) {
				ll l = i ^ jj;
				if (l > i) {
					ull a = keys[i], c = keys[l];
					if ((a > c) == ((i & kk) == 0)) keys[i] = c, keys[l] = a;
				}
			}
			__syncthreads();
		}
}

// gm_karras_split is karrasSplit of ops/cpu/lbvh.go: the last index in
// [first, last) whose key shares a longer prefix with keys[first] than
// keys[last] does. The keys are unique.
__device__ __forceinline__ ll gm_karras_split(const ull *keys, ll first, ll last) {
	int common = __clzll((long long)(keys[first] ^ keys[last]));
	ll split = first, step = last - first;
	while (step > 1) {
		step = (step + 1) / 2;
		ll s = split + step;
		if (s < last && __clzll((long long)(keys[first] ^ keys[s])) > common) split = s;
	}
	return split;
}

// (2π)^(-D/2) for D = 2 and D = 3.
#define GM_NORM2 0.15915494309189535
#define GM_NORM3 0.06349363593424097

__device__ __forceinline__ float gm_exp(float x) { return expf(x); }
__device__ __forceinline__ double gm_exp(double x) { return exp(x); }
__device__ __forceinline__ float gm_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double gm_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float gm_log(float x) { return logf(x); }
__device__ __forceinline__ double gm_log(double x) { return log(x); }

// gm_abs is |v| as the CPU kernels' abs helpers compute it (−0 stays −0).
template <typename T> __device__ __forceinline__ T gm_abs(T v) { return v < 0 ? -v : v; }

template <typename T> __device__ __forceinline__ T gm_norm_const(int d) {
	return d == 2 ? T(GM_NORM2) : T(GM_NORM3);
}

// gm_inv_det writes the inverse of the d×d row-major matrix m into inv and
// returns det m, with the same cofactor formulas as ops/cpu (linalg.go), so
// both backends round alike.
template <typename T> __device__ T gm_inv_det(int d, const T *m, T *inv) {
	if (d == 2) {
		T det = m[0] * m[3] - m[1] * m[2];
		T r = T(1) / det;
		inv[0] = m[3] * r; inv[1] = -m[1] * r; inv[2] = -m[2] * r; inv[3] = m[0] * r;
		return det;
	}
	T a = m[0], b = m[1], c = m[2], dd = m[3], e = m[4], f = m[5], g = m[6], h = m[7], i = m[8];
	T c00 = e * i - f * h, c01 = -(dd * i - f * g), c02 = dd * h - e * g;
	T det = a * c00 + b * c01 + c * c02;
	T r = T(1) / det;
	inv[0] = c00 * r; inv[3] = c01 * r; inv[6] = c02 * r;
	inv[1] = -(b * i - c * h) * r; inv[4] = (a * i - c * g) * r; inv[7] = -(a * h - b * g) * r;
	inv[2] = (b * f - c * e) * r; inv[5] = -(a * f - c * dd) * r; inv[8] = (a * e - b * dd) * r;
	return det;
}

// GmPrep is a Gaussian prepared for evaluation: coef = w·(2π)^(-D/2)·det(Σ)^(-½),
// norm without the weight, position and the inverse covariance. It is what
// the tiled kernels keep in shared memory, so every thread of a block reuses
// one inversion per component.
template <typename T> struct GmPrep {
	T coef, norm, w;
	T mu[3];
	T a[9]; // Σ⁻¹ row-major D×D
};

template <typename T> __device__ void gm_prepare(int d, const T *g, GmPrep<T> &p) {
	p.w = g[0];
	for (int j = 0; j < d; j++) p.mu[j] = g[1 + j];
	T det = gm_inv_det(d, g + 1 + d, p.a);
	p.norm = gm_norm_const<T>(d) / gm_sqrt(det);
	p.coef = p.w * p.norm;
}

// gm_quad returns tᵀ A t, grouping the off-diagonal terms as ops/cpu does.
template <typename T> __device__ __forceinline__ T gm_quad(int d, const T *a, const T *t) {
	if (d == 2) return a[0] * t[0] * t[0] + (a[1] + a[2]) * t[0] * t[1] + a[3] * t[1] * t[1];
	return a[0] * t[0] * t[0] + a[4] * t[1] * t[1] + a[8] * t[2] * t[2] +
	       (a[1] + a[3]) * t[0] * t[1] + (a[2] + a[6]) * t[0] * t[2] + (a[5] + a[7]) * t[1] * t[2];
}

template <typename T> __device__ __forceinline__ void gm_matvec(int d, const T *a, const T *t, T *out) {
	for (int r = 0; r < d; r++) {
		T s = 0;
		for (int c = 0; c < d; c++) s += a[r * d + c] * t[c];
		out[r] = s;
	}
}

// gm_offset_form writes v = p − μ and u = Σ⁻¹ v (a = Σ⁻¹) and returns vᵀu,
// the exponent's quadratic form in the form the gradients need it, with u.
template <typename T>
__device__ __forceinline__ T gm_offset_form(int d, const T *a, const T *p, const T *mu, T *v, T *u) {
	for (int j = 0; j < d; j++) v[j] = p[j] - mu[j];
	gm_matvec(d, a, v, u);
	T qf = 0;
	for (int j = 0; j < d; j++) qf += v[j] * u[j];
	return qf;
}

// gm_point_set mirrors ops/cpu's pointSet: a point batch [pb, pc, m, D]
// broadcasts along a dimension of size 1.
__device__ __forceinline__ ll gm_point_set(ll b, ll c, ll pb, ll pc) {
	if (pb == 1) b = 0;
	if (pc == 1) c = 0;
	return b * pc + c;
}

// GM_BY_DIM(d, f, args...) calls f<T, 2>(args...) for d = 2 and
// f<T, 3>(args...) otherwise: the kernels whose loops run over the
// dimension are compiled per dimension (the _d templates), so that those
// loops unroll and their small arrays stay in registers; the exported
// kernel takes d at run time and dispatches.
#define GM_BY_DIM(d, f, ...) ((d) == 2 ? f<T, 2>(__VA_ARGS__) : f<T, 3>(__VA_ARGS__))

// Dynamic shared memory of the tiled kernels, cast to T by each kernel.
extern __shared__ unsigned char gm_smem[];

// gm_block_box reduces the per-thread bounds lo[0..3) and hi[0..3) over the
// block and gives every thread the result, through red (6·blockDim.x
// doubles of shared memory, free again when it returns). Minimum and
// maximum are exact, so the result does not depend on the order.
__device__ __forceinline__ void gm_block_box(double *lo, double *hi, double *red) {
	const ll tid = threadIdx.x, bd = blockDim.x;
	for (int a = 0; a < 3; a++) red[a * bd + tid] = lo[a], red[(3 + a) * bd + tid] = hi[a];
	__syncthreads();
	for (ll h = bd / 2; h > 0; h /= 2) {
		if (tid < h)
			for (int a = 0; a < 3; a++) {
				red[a * bd + tid] = fmin(red[a * bd + tid], red[a * bd + tid + h]);
				red[(3 + a) * bd + tid] = fmax(red[(3 + a) * bd + tid], red[(3 + a) * bd + tid + h]);
			}
		__syncthreads();
	}
	for (int a = 0; a < 3; a++) lo[a] = red[a * bd], hi[a] = red[(3 + a) * bd];
	__syncthreads(); // every thread has read red
}

// GM_NO_UNROLL before a loop keeps nvcc from unrolling it: for loops whose
// bodies are large and whose trip counts are data (TreeHEM's EM step), where
// unrolling multiplies the PTX and not the speed. The emulator defines it
// empty.
#ifndef GM_NO_UNROLL
#define GM_NO_UNROLL _Pragma("unroll 1")
#endif

// GM_NOINLINE keeps nvcc from inlining a large device function into each of
// its callers. The emulator defines it empty.
#ifndef GM_NOINLINE
#define GM_NOINLINE __noinline__
#endif

// GM_KERNEL_HOOK(name) follows the definitions of every exported pair of
// kernels. Under nvcc it is empty; the CUDA emulator (emu_cuda.h)
// defines it to register both kernels by name.
#ifndef GM_KERNEL_HOOK
#define GM_KERNEL_HOOK(name)
#endif

// GM_EXPORT(name, PARAMS, ARGS) defines the kernels name_f32 and name_f64,
// which call the device template name<T>; PARAMS is a function-like macro
// of the element type giving the parameter list, ARGS the argument list.
#define GM_EXPORT(name, PARAMS, ARGS)                                         \
	extern "C" __global__ void name##_f32 PARAMS(float) { name<float> ARGS; }    \
	extern "C" __global__ void name##_f64 PARAMS(double) { name<double> ARGS; }  \
	GM_KERNEL_HOOK(name)
