// harmonia-exit-probe STORE: a process that exits while another of its
// threads is inside libcrypto, as harmonia-play does when a cache download
// is still hashing (HarmoniaPlayCacheTests, "exits while libcrypto is in
// use"). A thread lists STORE's offline index over and over (each entry's
// file name is a SHA-256 of its key); once it has done so 200 times, the
// main thread exits. Exit 0 when the process ends cleanly; a signal is the
// regression (OpenSSL's cleanup at exit freeing what the thread still uses).
import Foundation
import HarmoniaOfflineStore
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 2, let store = try? OfflineStore(directory: arguments[1]),
      let listed = try? store.entries(), !listed.isEmpty else {
    FileHandle.standardError.write(Data("usage: harmonia-exit-probe STORE (a store holding at least one entry)\n".utf8))
    exit(2)
}
let rounds = Atomic<Int>(0)
let thread = Thread {
    while true {
        _ = try? store.entries()
        rounds.add(1, ordering: .relaxed)
    }
}
thread.start()
while rounds.load(ordering: .relaxed) < 200 { usleep(1000) }
exit(0)
