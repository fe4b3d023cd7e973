// CLibFuzzer: the one libFuzzer entry point the fuzz build calls.
//
// No library is linked here: `make fuzz` (Tests/Fuzz/fuzz.sh) links the
// toolchain's libclang_rt.fuzzer_no_main into harmonia-play built with
// -DFUZZING, and only that build references this function. No logic lives here.
#ifndef HARMONIA_CLIBFUZZER_SHIM_H
#define HARMONIA_CLIBFUZZER_SHIM_H

#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer's driver (flags from argv, as its own main would) with
/// `callback` as the fuzz target. Part of libFuzzer since LLVM 11.
int LLVMFuzzerRunDriver(int *argc, char ***argv,
                        int (*callback)(const uint8_t *data, size_t size));

#endif
