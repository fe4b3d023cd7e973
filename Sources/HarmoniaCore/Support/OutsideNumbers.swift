// Numbers that come from outside — files, tags, the command line, control
// clients — made safe before arithmetic: specs/hardening.md §Clamping.
// Swift traps on overflow and on converting NaN or an out-of-range Double to
// an integer; these conversions never trap.

/// The largest frame position or count the engine computes with: 2^53, the
/// last integer a Double holds exactly (3,300 years at 96 kHz). A value
/// beyond it from outside is absurd, and is clamped to it or refused.
public let maxFramePosition: Int64 = 1 << 53

/// Conversions of numbers from outside (files, tags, the command line) that
/// never trap.
extension Int64 {
    /// `value` rounded to the nearest integer and clamped to
    /// ±`maxFramePosition`; NaN becomes 0. For frame positions computed
    /// from seconds that came from outside (a seek, a range, a CUE time).
    public init(clampingFrames value: Double) {
        guard !value.isNaN else { self = 0; return }
        let limit = Double(maxFramePosition)
        self = Int64(Swift.min(Swift.max(value.rounded(), -limit), limit))
    }
}

/// Checks on numbers that come from outside.
extension Double {
    /// `self` when it is a finite number, else nil.
    public var finiteOrNil: Double? { isFinite ? self : nil }
}
