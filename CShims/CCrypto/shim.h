// CCrypto: OpenSSL's libcrypto for Swift, for SHA-256 only (the offline
// store's file names and content hashes, HarmoniaOfflineStore/SHA256.swift).
// libcurl (libcurl4-openssl-dev) already links it; its SHA-256 uses the
// CPU's SHA extensions where there are some (about 1.5 GB/s, against
// 160 MB/s for the portable Swift one it replaced). No macros needed.
#ifndef HARMONIA_CCRYPTO_SHIM_H
#define HARMONIA_CCRYPTO_SHIM_H

#include <openssl/evp.h>

#endif
