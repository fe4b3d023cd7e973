// ThreadName: names the calling thread for `top -H`, `ps -L`, gdb and
// /proc/PID/task/TID/comm. Foundation's `Thread.name` does not reach the
// kernel's thread name on Linux (and Glibc's pthread_setname_np is not
// visible to Swift), so each thread of ours writes its own comm file.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Sets the calling thread's kernel name to the first 15 bytes of `name`
/// (the kernel's limit). Any non-real-time thread; call it first thing in a
/// thread body. Failure (no /proc) leaves the name as it was.
public func nameCurrentThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
