// emu_api.h: the C interface of the CUDA emulator (emu_runtime.cc), called
// by driver_emu.go. Every function that can fail returns NULL on success or
// a malloc'd message that the caller frees.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

char *gmemu_alloc(size_t bytes, uint64_t *ptr);
char *gmemu_free(uint64_t ptr);
char *gmemu_copy_htod(uint64_t dst, const void *src, size_t bytes);
char *gmemu_copy_dtoh(void *dst, uint64_t src, size_t bytes);
char *gmemu_memset_d32(uint64_t dst, uint32_t value, size_t count);

// gmemu_kernel returns the handle of the registered kernel name, or -1.
int gmemu_kernel(const char *name);
char *gmemu_launch(int kernel, const unsigned *grid, const unsigned *block, size_t shared, const uint64_t *params, int nparams);

// gmemu_configure sets the schedule (0 forward, 1 reverse, 2 shuffled with
// seed) of the launches that follow.
void gmemu_configure(int schedule, uint64_t seed);
int gmemu_workers(void);
int gmemu_asan(void);
size_t gmemu_max_shared(void);

#ifdef __cplusplus
}
#endif
