#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include "CMallocCounter.h"
#include <stddef.h>
#include <stdatomic.h>
#include <errno.h>
#include <string.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#    define HC_SANITIZED 1
#  endif
#endif

struct bank {
    _Atomic uint64_t allocations;
    _Atomic uint64_t first_section_allocations;
    _Atomic uint64_t attributed;
    _Atomic uint64_t sections;
    _Atomic int stack_count;
    const char *_Atomic attribution_library;
    void *stacks[4][10];
    int stack_depth[4];
};
static struct bank banks[HC_MALLOC_COUNTER_BANKS];

/* The calling thread's bank (0: not counting) and whether its current
   section is the bank's first since the reset. */
static _Thread_local int current_bank;
static _Thread_local int in_first_section;

static int valid(int bank) { return bank > 0 && bank < HC_MALLOC_COUNTER_BANKS; }

void hc_malloc_counter_mark(int bank) {
    if (valid(bank) && current_bank != bank)
        in_first_section = atomic_fetch_add_explicit(&banks[bank].sections, 1, memory_order_relaxed) == 0;
    current_bank = valid(bank) ? bank : 0;
}
uint64_t hc_malloc_counter_allocations(int bank) { return valid(bank) ? atomic_load(&banks[bank].allocations) : 0; }
uint64_t hc_malloc_counter_first_section_allocations(int bank) { return valid(bank) ? atomic_load(&banks[bank].first_section_allocations) : 0; }
uint64_t hc_malloc_counter_sections(int bank) { return valid(bank) ? atomic_load(&banks[bank].sections) : 0; }
uint64_t hc_malloc_counter_attributed(int bank) { return valid(bank) ? atomic_load(&banks[bank].attributed) : 0; }
void hc_malloc_counter_attribute_to(int bank, const char *library) { if (valid(bank)) banks[bank].attribution_library = library; }
void hc_malloc_counter_reset(int bank) {
    if (!valid(bank)) return;
    struct bank *b = &banks[bank];
    atomic_store(&b->allocations, 0); atomic_store(&b->first_section_allocations, 0); atomic_store(&b->attributed, 0);
    atomic_store(&b->sections, 0); atomic_store(&b->stack_count, 0);
    for (int i = 0; i < 4; i++) b->stack_depth[i] = 0;
}

/* 1 when the allocation is the bank's attribution library's (counted apart). */
static int attribute(struct bank *b, void *caller) {
    Dl_info info;
    const char *library = b->attribution_library;
    if (library && dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, library)) {
        atomic_fetch_add_explicit(&b->attributed, 1, memory_order_relaxed);
        return 1;
    }
    return 0;
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

/* Counting itself may allocate (dladdr, backtrace): the thread leaves its
   bank while it counts. */
#define count() do { int bank_ = current_bank; if (bank_) { \
    struct bank *b = &banks[bank_]; \
    current_bank = 0; \
    if (in_first_section) { atomic_fetch_add_explicit(&b->first_section_allocations, 1, memory_order_relaxed); } \
    else { atomic_fetch_add_explicit(&b->allocations, 1, memory_order_relaxed); } \
    if (!attribute(b, __builtin_return_address(0))) { \
        int slot = atomic_fetch_add_explicit(&b->stack_count, 1, memory_order_relaxed); \
        if (slot < 4) { b->stack_depth[slot] = backtrace(b->stacks[slot], 10); } } \
    current_bank = bank_; } } while (0)

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

int hc_malloc_counter_stack(int bank, int which, void **out, int capacity) {
    if (!valid(bank) || which < 0 || which >= 4) return 0;
    struct bank *b = &banks[bank];
    int n = b->stack_depth[which] < capacity ? b->stack_depth[which] : capacity;
    for (int i = 0; i < n; i++) out[i] = b->stacks[which][i];
    return n;
}
