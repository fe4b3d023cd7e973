// CCrypto: OpenSSL's libcrypto for Swift, for SHA-256 only (the offline
// store's file names and content hashes, HarmoniaOfflineStore/SHA256.swift).
// libcurl (libcurl4-openssl-dev) already links it; its SHA-256 uses the
// CPU's SHA extensions where there are some (about 1.5 GB/s, against
// 160 MB/s for the portable Swift one it replaced).
//
// Also the process's first OpenSSL call, made before libcurl's (HarmoniaHTTP)
// and before the first digest (HarmoniaOfflineStore): without
// OPENSSL_INIT_NO_ATEXIT, OpenSSL frees its global state in an atexit
// handler, and a thread still hashing or in a TLS transfer while the
// process exits then crashes on the freed locks (SIGSEGV at exit, seen in CI).
#ifndef HARMONIA_CCRYPTO_SHIM_H
#define HARMONIA_CCRYPTO_SHIM_H

#include <openssl/crypto.h>
#include <openssl/evp.h>

/// Initialises libcrypto with no cleanup at exit. Idempotent; any thread.
/// Returns 1 on success (0 only when out of memory).
static inline int harmonia_openssl_init_without_atexit(void) {
    return OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

#endif
