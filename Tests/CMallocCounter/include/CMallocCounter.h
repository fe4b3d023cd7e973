// CMallocCounter: counts heap allocations made inside marked sections of
// threads (test-only). The test binary's malloc family is replaced by
// wrappers around glibc's __libc_* functions; nothing is replaced under a
// sanitizer (which owns malloc), where `hc_malloc_counter_active` is 0.
//
// Counts go to one of HC_MALLOC_COUNTER_BANKS independent banks, so tests
// that run at the same time each count their own sections: a thread marks
// itself inside bank b (1…) or outside (0), and every call below names its bank.
// In use: 1 the PulseAudio write callback, 2 the FFmpeg decode loop, 3 the
// service's decode thread.
#ifndef HARMONIA_CMALLOCCOUNTER_H
#define HARMONIA_CMALLOCCOUNTER_H

#include <stdint.h>

#define HC_MALLOC_COUNTER_BANKS 8

/// 1 when the counter is in effect (not under ASan/TSan).
extern const int hc_malloc_counter_active;

/// Marks the calling thread as inside a counted section of `bank` (1…7), or outside (0).
void hc_malloc_counter_mark(int bank);

/// Allocations (malloc, calloc, realloc, memalign family) made in `bank`'s
/// sections since its last reset, apart from its first section; and sections entered.
uint64_t hc_malloc_counter_allocations(int bank);
uint64_t hc_malloc_counter_sections(int bank);
void hc_malloc_counter_reset(int bank);

/// Allocations made in `bank`'s first section since its last reset.
uint64_t hc_malloc_counter_first_section_allocations(int bank);

/// Of `bank`'s counted allocations, those whose caller of malloc lies in a
/// shared object whose path contains `library` (set before counting; e.g. "libpulse").
void hc_malloc_counter_attribute_to(int bank, const char *library);
uint64_t hc_malloc_counter_attributed(int bank);

/// The call stack of `bank`'s allocation `which` (0…3) among those not
/// attributed to its library, for diagnosis; depth 0 when there is none.
int hc_malloc_counter_stack(int bank, int which, void **out, int capacity);

/// The symbol containing `address` (dladdr), "?" when unknown.
const char *hc_symbol_name(void *address);

#endif
