//go:build gmcuda && gmcudaemu

// emu_runtime.cc: the CUDA emulator's device memory, kernel registry and launch.
//
// A launch hands its blocks to a pool of worker threads; a worker runs one
// block at a time, each CUDA thread of the block a fiber on its own stack. A fiber runs until it reaches __syncthreads, a warp collective or
// its end; the worker then runs the next ready fiber in the schedule's order.
// A barrier releases its waiters when every live thread of the block (a
// collective: every lane of its mask) has arrived, so the kernels see CUDA's
// semantics: shared memory per block, nothing ordered between barriers.
// What CUDA leaves undefined and the emulator can see is an error of the
// launch: a collective whose mask names an exited lane, lanes meeting at
// different collectives, a block that cannot make progress (a barrier in
// divergent code), more shared memory than a kernel gets without opting in.
#include <sys/mman.h>
#include <unistd.h>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu_cuda.h"
#include "emu_api.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define GM_EMU_ASAN 1
#else
#define GM_EMU_ASAN 0
#endif

// Dynamic shared memory: 48 KiB, what a kernel gets without opting in.
static const size_t kMaxShared = 48 * 1024;
alignas(16) thread_local unsigned char gm_smem[kMaxShared];

namespace gmemu {

static const size_t kStack = 128 * 1024; // per CUDA thread
static const size_t kGuard = 4096;       // an inaccessible page below each stack
static const unsigned kMaxThreads = 1024;

thread_local Block *worker_block;
const Grid *current_grid;

// Context is a suspended stack. On x86-64 it is the saved stack pointer of
// gmemu_switch, which saves only what the ABI makes the callee keep (no
// system call, unlike swapcontext, which saves the signal mask); elsewhere
// it is a ucontext.
#if defined(__x86_64__)
struct Context {
	void *sp;
};
extern "C" void gmemu_switch(void **save, void *to);
asm(R"(
	.text
	.globl gmemu_switch
	.type gmemu_switch, @function
gmemu_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	subq $8, %rsp
	stmxcsr (%rsp)
	fnstcw 4(%rsp)
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	ldmxcsr (%rsp)
	fldcw 4(%rsp)
	addq $8, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size gmemu_switch, .-gmemu_switch
	.section .note.GNU-stack, "", @progbits
	.text
)");

static void swap(Context &from, Context &to) { gmemu_switch(&from.sp, to.sp); }

// start makes ctx begin at entry on the stack [base, base+size): the frame
// gmemu_switch pops (default MXCSR and x87 control word, six zero
// registers), then entry as the return address, as if entry had been called
// with a 16-byte aligned stack.
static void start(Context &ctx, char *base, size_t size, void (*entry)()) {
	uintptr_t top = ((uintptr_t)(base + size)) & ~uintptr_t(15);
	uint64_t *sp = (uint64_t *)top;
	*--sp = 0; // entry's return address: it never returns
	*--sp = (uint64_t)entry;
	for (int i = 0; i < 6; i++)
		*--sp = 0;
	*--sp = 0x1F80 | (uint64_t(0x037F) << 32);
	ctx.sp = sp;
}
#else
struct Context {
	ucontext_t uc;
};

static void swap(Context &from, Context &to) { swapcontext(&from.uc, &to.uc); }

static void start(Context &ctx, char *base, size_t size, void (*entry)()) {
	getcontext(&ctx.uc);
	ctx.uc.uc_stack.ss_sp = base;
	ctx.uc.uc_stack.ss_size = size;
	ctx.uc.uc_link = nullptr;
	makecontext(&ctx.uc, entry, 0);
}
#endif

struct Fiber {
	Context ctx;
	uint3 tid;
	unsigned lane, warp;
	enum State { ready, at_barrier, at_warp, done } state;
	uint64_t bits, result; // a warp collective's operand and result
	int arg, result_i;
	void *fake_stack; // AddressSanitizer's, across switches
	char *stack;
};

struct Warp {
	unsigned live, arrived, mask;
	WarpOp op;
	int width;
};

struct Launch {
	const char *name;
	Thunk thunk;
	void **params;
	Grid grid;
	size_t shared;
	int schedule;
	uint64_t seed;
	uint64_t blocks;
	std::atomic<uint64_t> next{0};
	std::atomic<bool> failed{false};
	std::mutex mu;
	std::string error;
};

struct Worker : Block {
	Launch *launch = nullptr;
	std::vector<Fiber> fibers;
	std::vector<Warp> warps;
	std::vector<unsigned> order;
	Context sched;
	const void *sched_bottom = nullptr;
	size_t sched_size = 0;
	unsigned threads = 0, live = 0, arrived = 0;
	int bar_op = 0, bar_acc = 0;
	std::string error;
	uint64_t rng = 0;
};

static thread_local Worker *worker;

const uint3 &thread_idx() { return worker_block->cur->tid; }

static uint64_t splitmix(uint64_t &s) {
	uint64_t z = (s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

// message returns a malloc'd formatted message for the C interface.
static char *message(const char *f, ...) {
	char buf[512];
	va_list ap;
	va_start(ap, f);
	vsnprintf(buf, sizeof buf, f, ap);
	va_end(ap);
	return strdup(buf);
}

// Switching between the worker (the scheduler) and a fiber, with the
// annotations AddressSanitizer needs to follow a change of stack.
static void enter(Worker &w, Fiber &f) {
	w.cur = &f;
#if GM_EMU_ASAN
	void *save = nullptr;
	__sanitizer_start_switch_fiber(&save, f.stack, kStack);
#endif
	swap(w.sched, f.ctx);
#if GM_EMU_ASAN
	__sanitizer_finish_switch_fiber(save, nullptr, nullptr);
#endif
	w.cur = nullptr;
}

static void leave(Worker &w, Fiber &f, bool exiting) {
#if GM_EMU_ASAN
	__sanitizer_start_switch_fiber(exiting ? nullptr : &f.fake_stack, w.sched_bottom, w.sched_size);
#else
	(void)exiting;
#endif
	swap(f.ctx, w.sched);
#if GM_EMU_ASAN
	__sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
}

// fail ends the running block with an error naming the thread; the fiber
// is never resumed, so nothing on its stack may own memory (the message is
// formatted into arrays, and only the worker's string keeps it).
[[noreturn]] static void fail(const char *f, ...) {
	Worker &w = *worker;
	Fiber &fb = *w.cur;
	if (w.error.empty()) {
		char msg[512];
		int n = snprintf(msg, sizeof msg, "thread (%u,%u,%u): ", fb.tid.x, fb.tid.y, fb.tid.z);
		va_list ap;
		va_start(ap, f);
		vsnprintf(msg + n, sizeof msg - n, f, ap);
		va_end(ap);
		w.error = msg;
	}
	leave(w, fb, true);
	abort(); // unreachable: a failed block's fibers are not resumed
}

static void release_block(Worker &w) {
	if (w.arrived == 0 || w.arrived < w.live)
		return;
	for (auto &f : w.fibers)
		if (f.state == Fiber::at_barrier) {
			f.state = Fiber::ready;
			f.result_i = w.bar_acc;
		}
	w.arrived = 0;
}

int block_barrier(int op, int pred) {
	Worker &w = *worker;
	Fiber &f = *w.cur;
	if (w.arrived == 0) {
		w.bar_op = op;
		w.bar_acc = op == 2 ? 1 : 0;
	} else if (w.bar_op != op) {
		fail("threads of the block meet at different kinds of __syncthreads");
	}
	switch (op) {
	case 1: w.bar_acc += pred != 0; break;
	case 2: w.bar_acc &= pred != 0; break;
	case 3: w.bar_acc |= pred != 0; break;
	}
	w.arrived++;
	f.state = Fiber::at_barrier;
	release_block(w);
	leave(w, f, false);
	return f.result_i;
}

static void release_warp(Worker &w, unsigned wi) {
	Warp &wp = w.warps[wi];
	Fiber *lanes = &w.fibers[wi * 32];
	unsigned ballot = 0;
	for (unsigned l = 0; l < 32; l++)
		if ((wp.mask >> l & 1) && lanes[l].bits)
			ballot |= 1u << l;
	for (unsigned l = 0; l < 32; l++) {
		if (!(wp.mask >> l & 1))
			continue;
		Fiber &f = lanes[l];
		unsigned seg = l & ~unsigned(wp.width - 1), src = l;
		switch (wp.op) {
		case warp_sync: break;
		case warp_ballot: f.result = ballot; break;
		case warp_shfl_idx: src = seg + (unsigned(f.arg) & unsigned(wp.width - 1)); break;
		case warp_shfl_up: src = int(l) - f.arg < int(seg) ? l : l - f.arg; break;
		case warp_shfl_down: src = l + f.arg >= seg + wp.width ? l : l + f.arg; break;
		case warp_shfl_xor: src = l ^ unsigned(f.arg); src = src >= seg && src < seg + wp.width ? src : l; break;
		}
		if (wp.op >= warp_shfl_idx && wp.op <= warp_shfl_xor) {
			if (!(wp.mask >> src & 1))
				fail("lane %u of warp %u reads lane %u, which is not in the mask %#x", l, wi, src, wp.mask);
			f.result = lanes[src].bits;
		}
		f.state = Fiber::ready;
	}
	wp.arrived = 0;
}

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t bits, int arg, int width) {
	Worker &w = *worker;
	Fiber &f = *w.cur;
	Warp &wp = w.warps[f.warp];
	if (!(mask >> f.lane & 1))
		fail("lane %u calls a warp collective whose mask %#x leaves it out", f.lane, mask);
	if (mask & ~wp.live)
		fail("warp collective with mask %#x, but only lanes %#x of warp %u are running", mask, wp.live, f.warp);
	if (width <= 0 || width > 32 || (width & (width - 1)))
		fail("warp shuffle width %d is not a power of two up to 32", width);
	if (wp.arrived == 0) {
		wp.op = op;
		wp.mask = mask;
		wp.width = width;
	} else if (wp.op != op || wp.mask != mask || wp.width != width) {
		fail("lanes of warp %u meet at different warp collectives", f.warp);
	}
	f.bits = bits;
	f.arg = arg;
	f.state = Fiber::at_warp;
	wp.arrived |= 1u << f.lane;
	if (wp.arrived == mask)
		release_warp(w, f.warp);
	leave(w, f, false);
	return f.result;
}

static void fiber_main() {
	Worker &w = *worker;
#if GM_EMU_ASAN
	__sanitizer_finish_switch_fiber(nullptr, &w.sched_bottom, &w.sched_size);
#endif
	Fiber &f = *w.cur;
	w.launch->thunk(w.launch->params);
	Warp &wp = w.warps[f.warp];
	f.state = Fiber::done;
	w.live--;
	wp.live &= ~(1u << f.lane);
	if (wp.arrived && (wp.mask >> f.lane & 1))
		fail("lane %u of warp %u exits while lanes %#x wait for it at a warp collective", f.lane, f.warp, wp.arrived);
	release_block(w);
	leave(w, f, true);
	abort(); // unreachable: a finished fiber is not resumed
}

// stack returns the stack of CUDA thread i of this worker, mapped on first
// use with an inaccessible guard page below it and reused for every block.
static char *stack(Worker &w, unsigned i) {
	if (w.fibers[i].stack)
		return w.fibers[i].stack;
	void *p = mmap(nullptr, kStack + kGuard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		perror("gmcn CUDA emulator: mapping a thread stack");
		abort();
	}
	mprotect(p, kGuard, PROT_NONE);
	return w.fibers[i].stack = (char *)p + kGuard;
}

static void run_block(Worker &w, Launch &L, uint64_t id) {
	const dim3 &g = L.grid.grid, &b = L.grid.block;
	w.idx = uint3{unsigned(id % g.x), unsigned(id / g.x % g.y), unsigned(id / g.x / g.y)};
	unsigned n = b.x * b.y * b.z;
	w.threads = w.live = n;
	w.arrived = 0;
	w.error.clear();
	w.warps.assign((n + 31) / 32, Warp{});
	for (unsigned i = 0; i < n; i++)
		w.warps[i / 32].live |= 1u << (i % 32);
	// Unwritten shared memory reads as NaN (0xff… is a NaN as float and as
	// double); beyond the launch's dynamic size it is poisoned.
#if GM_EMU_ASAN
	ASAN_UNPOISON_MEMORY_REGION(gm_smem, kMaxShared);
	ASAN_POISON_MEMORY_REGION(gm_smem + L.shared, kMaxShared - L.shared);
#endif
	memset(gm_smem, 0xff, L.shared);
	for (unsigned i = 0; i < n; i++) {
		Fiber &f = w.fibers[i];
		f.stack = stack(w, i);
#if GM_EMU_ASAN
		// A block that failed left its fibers' frames poisoned.
		ASAN_UNPOISON_MEMORY_REGION(f.stack, kStack);
#endif
		f.tid = uint3{i % b.x, i / b.x % b.y, i / b.x / b.y};
		f.lane = i % 32;
		f.warp = i / 32;
		f.state = Fiber::ready;
		f.fake_stack = nullptr;
		start(f.ctx, f.stack, kStack, fiber_main);
	}
	w.order.resize(n);
	for (unsigned i = 0; i < n; i++)
		w.order[i] = L.schedule == 1 ? n - 1 - i : i;
	w.rng = L.seed ^ (id * 0xd1342543de82ef95ull);
	while (w.live > 0 && w.error.empty()) {
		if (L.schedule == 2)
			for (unsigned i = n - 1; i > 0; i--)
				std::swap(w.order[i], w.order[splitmix(w.rng) % (i + 1)]);
		bool ran = false;
		for (unsigned k = 0; k < n && w.error.empty(); k++) {
			Fiber &f = w.fibers[w.order[k]];
			if (f.state == Fiber::ready) {
				enter(w, f);
				ran = true;
			}
		}
		if (!ran && w.error.empty()) {
			unsigned bar = 0, warp = 0;
			for (auto &f : w.fibers)
				bar += f.state == Fiber::at_barrier, warp += f.state == Fiber::at_warp;
			char buf[200];
			snprintf(buf, sizeof buf, "deadlock: %u threads wait at __syncthreads and %u at warp collectives, %u of %u have exited (a barrier in divergent code?)", bar, warp, n - w.live, n);
			w.error = buf;
		}
	}
	if (!w.error.empty() && !L.failed.exchange(true)) {
		std::lock_guard<std::mutex> lk(L.mu);
		char where[160];
		snprintf(where, sizeof where, "kernel %s, block (%u,%u,%u), ", L.name, w.idx.x, w.idx.y, w.idx.z);
		L.error = where + w.error;
	}
}

// The worker pool: a launch wakes every worker, and each takes blocks from
// the launch's counter until none is left or a block failed.
class Pool {
      public:
	explicit Pool(unsigned n) {
		for (unsigned i = 0; i < n; i++)
			std::thread([this] { serve(); }).detach();
		workers_ = n;
	}
	unsigned workers() const { return workers_; }
	void run(Launch &L) {
		std::unique_lock<std::mutex> lk(mu_);
		job_ = &L;
		busy_ = workers_;
		gen_++;
		start_.notify_all();
		done_.wait(lk, [this] { return busy_ == 0; });
		job_ = nullptr;
	}

      private:
	void serve() {
		Worker w;
		w.fibers.resize(kMaxThreads);
		worker = &w;
		worker_block = &w;
		uint64_t seen = 0;
		for (;;) {
			Launch *L;
			{
				std::unique_lock<std::mutex> lk(mu_);
				start_.wait(lk, [&] { return gen_ != seen; });
				seen = gen_;
				L = job_;
			}
			w.launch = L;
			for (uint64_t id; !L->failed && (id = L->next++) < L->blocks;)
				run_block(w, *L, id);
			w.launch = nullptr;
			std::lock_guard<std::mutex> lk(mu_);
			if (--busy_ == 0)
				done_.notify_all();
		}
	}
	std::mutex mu_;
	std::condition_variable start_, done_;
	Launch *job_ = nullptr;
	uint64_t gen_ = 0;
	unsigned busy_ = 0, workers_ = 0;
};

static Pool &pool() {
	static Pool p([] {
		if (const char *s = getenv("GMCN_CUDAEMU_WORKERS"))
			if (int n = atoi(s); n > 0)
				return unsigned(n);
		unsigned n = std::thread::hardware_concurrency();
		return n == 0 ? 1u : n > 8 ? 8u : n;
	}());
	return p;
}

struct Kernel {
	std::string name;
	Thunk thunk;
	int params;
};

static std::vector<Kernel> &kernels() {
	static std::vector<Kernel> k;
	return k;
}

bool register_kernel(const char *name, Thunk thunk, int params) {
	kernels().push_back(Kernel{name, thunk, params});
	return true;
}

static std::mutex launch_mu;
static std::atomic<int> schedule{0};
static std::atomic<uint64_t> seed{1}, launches{0};

#if GM_EMU_ASAN
// report names the kernel, block and thread of an access AddressSanitizer
// reports from inside a launch.
static void report(const char *) {
	Worker *w = worker;
	if (w == nullptr || w->launch == nullptr || w->cur == nullptr)
		return;
	const uint3 &t = w->cur->tid;
	fprintf(stderr, "gmcn CUDA emulator: the access above was made by kernel %s, block (%u,%u,%u), thread (%u,%u,%u)\n",
	        w->launch->name, w->idx.x, w->idx.y, w->idx.z, t.x, t.y, t.z);
}
static const bool report_set = (__asan_set_error_report_callback(report), true);
#endif

// Device memory: host allocations of exactly the requested size (so
// AddressSanitizer's redzones sit right after the data), tracked so that
// copies and frees are checked as the driver checks them.
static std::mutex mem_mu;
static std::map<uint64_t, size_t> allocs;

static char *check_range(uint64_t p, size_t n, const char *what) {
	std::lock_guard<std::mutex> lk(mem_mu);
	auto it = allocs.upper_bound(p);
	if (it == allocs.begin() || p + n > std::prev(it)->first + std::prev(it)->second) {
		if (it == allocs.begin() || p >= std::prev(it)->first + std::prev(it)->second)
			return message("%s of %zu bytes at device address %#llx: not in any allocation", what, n, (unsigned long long)p);
		--it;
		return message("%s of %zu bytes at device address %#llx: reaches %zu bytes past the end of the %zu-byte allocation at %#llx",
		               what, n, (unsigned long long)p, size_t(p + n - it->first - it->second), it->second, (unsigned long long)it->first);
	}
	return nullptr;
}

} // namespace gmemu

using namespace gmemu;

extern "C" {

char *gmemu_alloc(size_t bytes, uint64_t *ptr) {
	void *p = malloc(bytes ? bytes : 1);
	if (p == nullptr)
		return message("allocating %zu bytes: out of memory", bytes);
	std::lock_guard<std::mutex> lk(mem_mu);
	allocs[(uint64_t)p] = bytes;
	*ptr = (uint64_t)p;
	return nullptr;
}

char *gmemu_free(uint64_t ptr) {
	std::lock_guard<std::mutex> lk(mem_mu);
	auto it = allocs.find(ptr);
	if (it == allocs.end())
		return message("freeing device address %#llx, which is not the start of an allocation", (unsigned long long)ptr);
	allocs.erase(it);
	free((void *)ptr);
	return nullptr;
}

char *gmemu_copy_htod(uint64_t dst, const void *src, size_t bytes) {
	if (char *e = check_range(dst, bytes, "copy to the device"))
		return e;
	memcpy((void *)dst, src, bytes);
	return nullptr;
}

char *gmemu_copy_dtoh(void *dst, uint64_t src, size_t bytes) {
	if (char *e = check_range(src, bytes, "copy from the device"))
		return e;
	memcpy(dst, (const void *)src, bytes);
	return nullptr;
}

char *gmemu_memset_d32(uint64_t dst, uint32_t value, size_t count) {
	if (dst % 4 != 0)
		return message("memset of 32-bit values at unaligned device address %#llx", (unsigned long long)dst);
	if (char *e = check_range(dst, count * 4, "memset"))
		return e;
	uint32_t *p = (uint32_t *)dst;
	for (size_t i = 0; i < count; i++)
		p[i] = value;
	return nullptr;
}

int gmemu_kernel(const char *name) {
	auto &k = kernels();
	for (size_t i = 0; i < k.size(); i++)
		if (k[i].name == name)
			return int(i);
	return -1;
}

char *gmemu_launch(int kernel, const unsigned *grid, const unsigned *block, size_t shared, const uint64_t *params, int nparams) {
	auto &ks = kernels();
	if (kernel < 0 || size_t(kernel) >= ks.size())
		return message("launch of kernel handle %d, which was never loaded", kernel);
	const Kernel &k = ks[kernel];
	if (nparams != k.params)
		return message("kernel %s takes %d parameters, the launch passes %d", k.name.c_str(), k.params, nparams);
	unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
	if (threads == 0 || threads > kMaxThreads || block[2] > 64)
		return message("kernel %s: block (%u,%u,%u) is not a valid CUDA block (1 to %u threads, z ≤ 64)", k.name.c_str(), block[0], block[1], block[2], kMaxThreads);
	if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || grid[0] > 0x7fffffffu || grid[1] > 65535 || grid[2] > 65535)
		return message("kernel %s: grid (%u,%u,%u) is not a valid CUDA grid", k.name.c_str(), grid[0], grid[1], grid[2]);
	if (shared > kMaxShared)
		return message("kernel %s asks for %zu bytes of dynamic shared memory, more than the %zu a kernel gets without opting in", k.name.c_str(), shared, kMaxShared);
	std::vector<uint64_t> vals(params, params + nparams);
	std::vector<void *> ptrs(nparams);
	for (int i = 0; i < nparams; i++)
		ptrs[i] = &vals[i];
	std::lock_guard<std::mutex> lk(launch_mu);
	Grid g{dim3{grid[0], grid[1], grid[2]}, dim3{block[0], block[1], block[2]}};
	Launch L;
	L.name = k.name.c_str();
	L.thunk = k.thunk;
	L.params = ptrs.data();
	L.grid = g;
	L.shared = shared;
	L.schedule = schedule;
	L.seed = seed ^ (launches++ * 0x9e3779b97f4a7c15ull);
	L.blocks = (uint64_t)grid[0] * grid[1] * grid[2];
	current_grid = &L.grid;
	pool().run(L);
	current_grid = nullptr;
	if (L.failed)
		return strdup(L.error.c_str());
	return nullptr;
}

void gmemu_configure(int s, uint64_t sd) {
	schedule = s;
	seed = sd;
	launches = 0;
}

int gmemu_workers(void) { return int(pool().workers()); }

int gmemu_asan(void) { return GM_EMU_ASAN; }

size_t gmemu_max_shared(void) { return kMaxShared; }

} // extern "C"
