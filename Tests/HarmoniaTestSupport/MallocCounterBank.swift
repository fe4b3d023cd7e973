// One bank of the test binary's malloc counter (Tests/CMallocCounter), for
// the tests that prove a path allocates nothing. Banks in use: 1 the
// PulseAudio write callback, 2 the FFmpeg decode loop, 3 the service's
// decode thread — each counting test has its own, so they can run together.
import CMallocCounter

public struct MallocCounterBank: Sendable {
    public let number: Int32

    public init(_ number: Int32) { self.number = number }

    /// Whether allocations are counted at all (not under ASan/TSan, which own malloc).
    public static var isActive: Bool { hc_malloc_counter_active != 0 }

    /// Zeroes the bank. Allocations whose caller of `malloc` lies in a shared
    /// object whose path contains `library` are also counted apart
    /// (`attributed`). The bank's first section is counted apart too
    /// (`firstSectionAllocations`); with `skippingFirstSection` an empty one
    /// is entered and left here, so every later section counts in `allocations`.
    public func reset(attributingTo library: StaticString? = nil, skippingFirstSection: Bool = false) {
        hc_malloc_counter_reset(number)
        // The counter keeps the pointer: a static string's storage lives for the process.
        hc_malloc_counter_attribute_to(number, library.map { UnsafeRawPointer($0.utf8Start).assumingMemoryBound(to: CChar.self) })
        if skippingFirstSection {
            enter()
            leave()
        }
    }

    /// The calling thread's allocations count in this bank from now on (a new section) …
    public func enter() { hc_malloc_counter_mark(number) }
    /// … until it leaves.
    public func leave() { hc_malloc_counter_mark(0) }

    public var allocations: Int { Int(hc_malloc_counter_allocations(number)) }
    public var firstSectionAllocations: Int { Int(hc_malloc_counter_first_section_allocations(number)) }
    public var attributed: Int { Int(hc_malloc_counter_attributed(number)) }
    public var sections: Int { Int(hc_malloc_counter_sections(number)) }

    /// Where the first (up to four) allocations not attributed to the
    /// library came from: one line of symbols per allocation, innermost first.
    public func unattributedStacks() -> [String] {
        (0..<Int32(4)).compactMap { which in
            var frames = [UnsafeMutableRawPointer?](repeating: nil, count: 10)
            let depth = Int(hc_malloc_counter_stack(number, which, &frames, 10))
            guard depth > 0 else { return nil }
            return frames.prefix(depth).compactMap { $0.map { String(cString: hc_symbol_name($0)) } }.joined(separator: " < ")
        }
    }
}
