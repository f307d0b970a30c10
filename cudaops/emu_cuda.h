// emu_cuda.h: the part of CUDA C++ that the kernels of package cudaops use,
// for compiling those same .cu sources with the host C++ compiler.
//
// Every CUDA thread of a block is a fiber of one emulator worker thread
// (emu_runtime.cc): blockIdx, threadIdx and the dynamic shared memory are the
// worker's and the running fiber's, __syncthreads and the warp collectives
// switch fibers until every live thread of the block (or lane of the warp)
// has arrived. Between two barriers the fibers of a block run one after the
// other in the order the schedule says (forward, reverse or shuffled), so a
// missing barrier changes the result with the schedule instead of hiding.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

struct uint3 {
	unsigned x, y, z;
};
struct dim3 {
	unsigned x, y, z;
};

namespace gmemu {

// Fiber is one CUDA thread; emu_runtime.cc defines it.
struct Fiber;

// Block is what a worker knows of the block it runs.
struct Block {
	uint3 idx;
	Fiber *cur; // the running CUDA thread
};

// Grid is the launch every worker runs blocks of.
struct Grid {
	dim3 grid, block;
};

extern thread_local Block *worker_block;
extern const Grid *current_grid;

const uint3 &thread_idx();

// Barriers and warp collectives (emu_runtime.cc). The op codes select what a
// warp collective computes when its last lane arrives.
enum WarpOp { warp_sync, warp_shfl_idx, warp_shfl_up, warp_shfl_down, warp_shfl_xor, warp_ballot };
int block_barrier(int op, int pred); // op: 0 sync, 1 count, 2 and, 3 or
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t bits, int arg, int width);

// Kernel registration: each exported kernel is a thunk that unpacks the
// 8-byte parameter slots into the kernel's parameters.
typedef void (*Thunk)(void **params);
bool register_kernel(const char *name, Thunk thunk, int params);

template <auto F> struct Export;
template <typename... A, void (*F)(A...)> struct Export<F> {
	static_assert(((sizeof(A) == 8) && ...), "every kernel parameter must be 8 bytes wide (gorgonia.org/cu copies 8 bytes per parameter)");
	static constexpr int params = sizeof...(A);
	template <std::size_t... I> static void call(void **p, std::index_sequence<I...>) {
		F(*reinterpret_cast<A *>(p[I])...);
	}
	static void thunk(void **p) { call(p, std::index_sequence_for<A...>{}); }
};

template <typename T> uint64_t to_bits(T v) {
	static_assert(sizeof(T) <= 8, "warp collectives move at most 8 bytes");
	uint64_t b = 0;
	std::memcpy(&b, &v, sizeof v);
	return b;
}
template <typename T> T from_bits(uint64_t b) {
	T v;
	std::memcpy(&v, &b, sizeof v);
	return v;
}

} // namespace gmemu

// The kernels' view of the launch.
#define threadIdx (::gmemu::thread_idx())
#define blockIdx (::gmemu::worker_block->idx)
#define blockDim (::gmemu::current_grid->block)
#define gridDim (::gmemu::current_grid->grid)
#define warpSize 32

// Qualifiers. __shared__ memory is per worker thread, and a worker runs one
// block at a time, so thread_local storage is exactly a block's.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ thread_local
#define GM_NO_UNROLL
#define GM_NOINLINE

// GM_KERNEL_HOOK (gm.cuh) registers both precisions of every exported kernel.
#define GM_KERNEL_HOOK(name)                                                                              \
	static const bool gm_emu_registered_##name =                                                         \
	    ::gmemu::register_kernel(#name "_f32", ::gmemu::Export<&name##_f32>::thunk,                      \
	                             ::gmemu::Export<&name##_f32>::params) &&                                \
	    ::gmemu::register_kernel(#name "_f64", ::gmemu::Export<&name##_f64>::thunk,                      \
	                             ::gmemu::Export<&name##_f64>::params);

inline void __syncthreads() { ::gmemu::block_barrier(0, 0); }
inline int __syncthreads_count(int p) { return ::gmemu::block_barrier(1, p); }
inline int __syncthreads_and(int p) { return ::gmemu::block_barrier(2, p); }
inline int __syncthreads_or(int p) { return ::gmemu::block_barrier(3, p); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::gmemu::warp_collective(::gmemu::warp_sync, mask, 0, 0, 32); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

template <typename T> T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
	return ::gmemu::from_bits<T>(::gmemu::warp_collective(::gmemu::warp_shfl_idx, mask, ::gmemu::to_bits(v), src, width));
}
template <typename T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
	return ::gmemu::from_bits<T>(::gmemu::warp_collective(::gmemu::warp_shfl_up, mask, ::gmemu::to_bits(v), (int)delta, width));
}
template <typename T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
	return ::gmemu::from_bits<T>(::gmemu::warp_collective(::gmemu::warp_shfl_down, mask, ::gmemu::to_bits(v), (int)delta, width));
}
template <typename T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
	return ::gmemu::from_bits<T>(::gmemu::warp_collective(::gmemu::warp_shfl_xor, mask, ::gmemu::to_bits(v), lane_mask, width));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
	return (unsigned)::gmemu::warp_collective(::gmemu::warp_ballot, mask, pred != 0, 0, 32);
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }

// Atomics: real ones, since the workers run blocks at the same time.
template <typename T> T gm_emu_atomic_update(T *p, T (*f)(T, T), T v) {
	static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4- or 8-byte values");
	typedef std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> U;
	U *u = reinterpret_cast<U *>(p);
	U old = __atomic_load_n(u, __ATOMIC_RELAXED);
	for (;;) {
		U next = ::gmemu::to_bits(f(::gmemu::from_bits<T>(old), v));
		if (__atomic_compare_exchange_n(u, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return ::gmemu::from_bits<T>(old);
	}
}
template <typename T> T atomicAdd(T *p, T v) {
	return gm_emu_atomic_update<T>(p, [](T a, T b) { return a + b; }, v);
}
template <typename T> T atomicSub(T *p, T v) {
	return gm_emu_atomic_update<T>(p, [](T a, T b) { return a - b; }, v);
}
template <typename T> T atomicMax(T *p, T v) {
	return gm_emu_atomic_update<T>(p, [](T a, T b) { return a > b ? a : b; }, v);
}
template <typename T> T atomicMin(T *p, T v) {
	return gm_emu_atomic_update<T>(p, [](T a, T b) { return a < b ? a : b; }, v);
}
template <typename T> T atomicExch(T *p, T v) {
	return gm_emu_atomic_update<T>(p, [](T, T b) { return b; }, v);
}
template <typename T> T atomicCAS(T *p, T cmp, T v) {
	__atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return cmp;
}

// Integer min and max of mixed operand types, as CUDA's overloads.
template <typename A, typename B> inline std::common_type_t<A, B> min(A a, B b) {
	return a < b ? std::common_type_t<A, B>(a) : std::common_type_t<A, B>(b);
}
template <typename A, typename B> inline std::common_type_t<A, B> max(A a, B b) {
	return a > b ? std::common_type_t<A, B>(a) : std::common_type_t<A, B>(b);
}

// Reinterpretations and the intrinsics whose host form is the libm call.
inline long long __double_as_longlong(double v) { return ::gmemu::from_bits<long long>(::gmemu::to_bits(v)); }
inline double __longlong_as_double(long long v) { return ::gmemu::from_bits<double>(::gmemu::to_bits(v)); }
inline int __float_as_int(float v) { return ::gmemu::from_bits<int>(::gmemu::to_bits(v)); }
inline float __int_as_float(int v) { return ::gmemu::from_bits<float>(::gmemu::to_bits(v)); }
inline unsigned __float_as_uint(float v) { return ::gmemu::from_bits<unsigned>(::gmemu::to_bits(v)); }
inline float __uint_as_float(unsigned v) { return ::gmemu::from_bits<float>(::gmemu::to_bits(v)); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(int v) { return v == 0 ? 32 : __builtin_clz((unsigned)v); }
inline int __clzll(long long v) { return v == 0 ? 64 : __builtin_clzll((unsigned long long)v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
template <typename T> inline T __ldg(const T *p) { return *p; }
