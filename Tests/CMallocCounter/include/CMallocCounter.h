// CMallocCounter: counts heap allocations made inside a marked section of a
// thread (test-only). The test binary's malloc family is replaced by
// wrappers around glibc's __libc_* functions; nothing is replaced under a
// sanitizer (which owns malloc), where `hc_malloc_counter_active` is 0.
#ifndef HARMONIA_CMALLOCCOUNTER_H
#define HARMONIA_CMALLOCCOUNTER_H

#include <stdint.h>

/// 1 when the counter is in effect (not under ASan/TSan).
extern const int hc_malloc_counter_active;

/// Marks the calling thread as inside (1) or outside (0) a counted section.
void hc_malloc_counter_mark(int inside);

/// Allocations (malloc, calloc, realloc, memalign family) made in marked
/// sections since the last reset, and sections entered.
uint64_t hc_malloc_counter_allocations(void);
uint64_t hc_malloc_counter_sections(void);
void hc_malloc_counter_reset(void);

/// Allocations made in the first marked section since the last reset
/// (counted apart: `hc_malloc_counter_allocations` counts the later ones).
uint64_t hc_malloc_counter_first_section_allocations(void);

/// Of all counted allocations, those whose caller of malloc lies in a shared
/// object whose path contains `library` (set before counting; e.g. "libpulse").
void hc_malloc_counter_attribute_to(const char *library);
uint64_t hc_malloc_counter_attributed(void);

/// The call stack of counted allocation `which` (0…3), for diagnosis.
int hc_malloc_counter_stack(int which, void **out, int capacity);

/// The symbol containing `address` (dladdr), "?" when unknown.
const char *hc_symbol_name(void *address);

#endif
