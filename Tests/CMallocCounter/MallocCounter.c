#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include "CMallocCounter.h"
#include <stddef.h>
#include <stdatomic.h>
#include <errno.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#    define HC_SANITIZED 1
#  endif
#endif

static void *stacks[4][10];
static int stack_depth[4];
static _Atomic uint64_t allocations;
static _Atomic uint64_t attributed;
static const char *attribution_library;
#include <string.h>
void hc_malloc_counter_attribute_to(const char *library) { attribution_library = library; }
uint64_t hc_malloc_counter_attributed(void) { return atomic_load(&attributed); }
static void attribute(void *caller) {
    Dl_info info;
    if (attribution_library && dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, attribution_library))
        atomic_fetch_add_explicit(&attributed, 1, memory_order_relaxed);
}
static _Atomic uint64_t first_section_allocations;
static _Thread_local int in_first_section;
static _Atomic uint64_t sections;
static _Thread_local int inside;
static _Atomic int caller_count;

void hc_malloc_counter_mark(int value) {
    if (value && !inside) in_first_section = atomic_fetch_add_explicit(&sections, 1, memory_order_relaxed) == 0;
    inside = value;
}
uint64_t hc_malloc_counter_first_section_allocations(void) { return atomic_load(&first_section_allocations); }
uint64_t hc_malloc_counter_allocations(void) { return atomic_load(&allocations); }
uint64_t hc_malloc_counter_sections(void) { return atomic_load(&sections); }
void hc_malloc_counter_reset(void) {
    atomic_store(&allocations, 0); atomic_store(&first_section_allocations, 0); atomic_store(&attributed, 0);
    atomic_store(&sections, 0); atomic_store(&caller_count, 0);
}


#ifdef HC_SANITIZED
const int hc_malloc_counter_active = 0;
#else
const int hc_malloc_counter_active = 1;

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

#define count() do { if (inside) { \
    if (in_first_section) { atomic_fetch_add_explicit(&first_section_allocations, 1, memory_order_relaxed); } \
    else { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); } \
    int slot = atomic_fetch_add_explicit(&caller_count, 1, memory_order_relaxed); \
    int was = inside; inside = 0; \
    attribute(__builtin_return_address(0)); \
    if (slot < 4) { stack_depth[slot] = backtrace(stacks[slot], 10); } \
    inside = was; } } while (0)

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count(); return __libc_realloc(p, size); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    count();
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
#endif

const char *hc_symbol_name(void *address) {
    Dl_info info;
    return dladdr(address, &info) && info.dli_sname ? info.dli_sname : "?";
}

int hc_malloc_counter_stack(int which, void **out, int capacity) {
    if (which < 0 || which >= 4) return 0;
    int n = stack_depth[which] < capacity ? stack_depth[which] : capacity;
    for (int i = 0; i < n; i++) out[i] = stacks[which][i];
    return n;
}
