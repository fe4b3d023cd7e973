// SHA-256 for file names and content hashes — specs/offline.md §Keys, §Index
//
// OpenSSL's libcrypto (CShims/CCrypto: its EVP digest calls, every one of
// them in this file), which libcurl already links: it hashes at the speed of
// the CPU's SHA extensions, so hashing a download never falls behind the
// transfer (benchmarks/run-offline.sh). Not for secrets.
import CCrypto

/// An incremental SHA-256 with value semantics (a copy hashes on from the
/// same state). Not thread-safe: one owner feeds it.
struct SHA256 {
    /// The digest state; copied before a write when shared.
    private final class Context {
        let pointer: OpaquePointer

        init() {
            _ = Self.libraryReady
            pointer = Self.required(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
            Self.check(EVP_DigestInit_ex(pointer, EVP_sha256(), nil), "EVP_DigestInit_ex")
        }

        init(copying other: Context) {
            pointer = Self.required(EVP_MD_CTX_new(), "EVP_MD_CTX_new")
            Self.check(EVP_MD_CTX_copy_ex(pointer, other.pointer), "EVP_MD_CTX_copy_ex")
        }

        deinit { EVP_MD_CTX_free(pointer) }

        /// libcrypto initialised once, with no cleanup at exit (CShims/CCrypto/shim.h):
        /// a download thread may be hashing while the process exits.
        private static let libraryReady: Void = { _ = harmonia_openssl_init_without_atexit() }()

        /// libcrypto fails these calls only when out of memory: as Swift's own allocations do, that stops the process.
        static func check(_ result: Int32, _ function: String) {
            precondition(result == 1, "libcrypto \(function) failed (out of memory)")
        }

        static func required(_ pointer: OpaquePointer?, _ function: String) -> OpaquePointer {
            guard let pointer else { preconditionFailure("libcrypto \(function) failed (out of memory)") }
            return pointer
        }
    }

    private var context = Context()

    init() {}

    /// Adds `bytes` to the message.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if !isKnownUniquelyReferenced(&context) { context = Context(copying: context) }
        Context.check(EVP_DigestUpdate(context.pointer, base, bytes.count), "EVP_DigestUpdate")
    }

    mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest of everything added, as 64 lowercase hex digits. The hasher starts over afterwards.
    mutating func finalizeHex() -> String {
        if !isKnownUniquelyReferenced(&context) { context = Context(copying: context) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        Context.check(EVP_DigestFinal_ex(context.pointer, &digest, &length), "EVP_DigestFinal_ex")
        context = Context()
        let digits = Array("0123456789abcdef".utf8)
        var hex = [UInt8]()
        hex.reserveCapacity(64)
        for byte in digest.prefix(Int(length)) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// The SHA-256 of `text`'s UTF-8 bytes, in hex.
    static func hex(of text: String) -> String {
        var hasher = SHA256()
        hasher.update(Array(text.utf8))
        return hasher.finalizeHex()
    }
}
