// standardise.cu: the statistic of gm.Standardise (ops/cpu/standardise.go):
// sd[b·C + c], the sample standard deviation (N − 1) of mixture (b, c)
// evaluated in float64 on a cell-centred grid (32² points in 2D, 10³ in 3D)
// over the bounding box of every position of sample b, enlarged by 15 % per
// side in 2D, and raised to at least 0.001.
#include "gm.cuh"

// One block per mixture. The threads find the box, then each takes a point
// of the grid per pass while the prepared components stream through shared
// memory in tiles of blockDim.x; sum and sum of squares meet in a
// shared-memory tree, in a fixed order.
// Compiled per dimension D, so that the small arrays stay in registers.
template <typename T, int D>
__device__ void gm_standardise_scale_d(double *sd, const T *x, ll C, ll n, ll grid) {
	const ll d = D;
	const ll m = blockIdx.x, b = m / C, s = 1 + d + d * d, tid = threadIdx.x, bd = blockDim.x;
	GmPrep<double> *tile = (GmPrep<double> *)gm_smem;
	double *red = (double *)(tile + bd); // 6 values per thread
	double lo[3], hi[3];
	for (int j = 0; j < 3; j++) lo[j] = INFINITY, hi[j] = -INFINITY;
	for (ll k = tid; k < C * n; k += bd) {
		const T *g = x + (b * C * n + k) * s;
		for (int j = 0; j < d; j++) lo[j] = fmin(lo[j], (double)g[1 + j]), hi[j] = fmax(hi[j], (double)g[1 + j]);
	}
	gm_block_box(lo, hi, red);
	if (d == 2)
		for (int j = 0; j < 2; j++) {
			double e = hi[j] - lo[j];
			lo[j] = lo[j] - 0.15 * e, hi[j] = hi[j] + 0.15 * e;
		}
	ll total = 1;
	for (int j = 0; j < d; j++) total *= grid;
	const T *mx = x + m * n * s;
	double sum = 0, sum2 = 0;
	for (ll base = 0; base < total; base += bd) {
		ll i = base + tid;
		double p[3] = {0, 0, 0}, v = 0;
		for (ll r = i, j = 0; j < d; j++, r /= grid) p[j] = lo[j] + (hi[j] - lo[j]) * ((double)(r % grid) + 0.5) / (double)grid;
		for (ll k0 = 0; k0 < n; k0 += bd) {
			__syncthreads(); // the previous tile is done with
			if (k0 + tid < n) {
				double g[13];
				for (ll e = 0; e < s; e++) g[e] = (double)mx[(k0 + tid) * s + e];
				gm_prepare<double>((int)d, g, tile[tid]);
			}
			__syncthreads();
			ll kn = min(bd, n - k0);
			if (i < total)
				for (ll k = 0; k < kn; k++) {
					double t[3];
					for (int j = 0; j < d; j++) t[j] = p[j] - tile[k].mu[j];
					v += tile[k].coef * gm_exp(-0.5 * gm_quad((int)d, tile[k].a, t));
				}
		}
		if (i < total) sum += v, sum2 += v * v;
	}
	__syncthreads();
	red[tid] = sum, red[bd + tid] = sum2;
	__syncthreads();
	for (ll h = bd / 2; h > 0; h /= 2) {
		if (tid < h) red[tid] += red[tid + h], red[bd + tid] += red[bd + tid + h];
		__syncthreads();
	}
	if (tid == 0) {
		double mean = red[0] / (double)total;
		double variance = (red[bd] - (double)total * mean * mean) / (double)(total - 1);
		sd[m] = fmax(sqrt(fmax(variance, 0.0)), 0.001);
	}
}
template <typename T>
__device__ void gm_standardise_scale(double *sd, const T *x, ll C, ll n, ll d, ll grid) {
	GM_BY_DIM(d, gm_standardise_scale_d, sd, x, C, n, grid);
}
#define GM_STANDARDISE_SCALE_PARAMS(T) (double *sd, const T *x, ll C, ll n, ll d, ll grid)
GM_EXPORT(gm_standardise_scale, GM_STANDARDISE_SCALE_PARAMS, (sd, x, C, n, d, grid))
