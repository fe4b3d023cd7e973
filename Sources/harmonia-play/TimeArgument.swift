// Times on the command line: `12.5` (seconds) or `[hh:]mm:ss[.fff]`.
import ArgumentParser

enum TimeArgument {
    /// The forms accepted, for help and error messages.
    static let forms = "seconds (12.5) or [hh:]mm:ss[.fff] (1:02.5, 1:00:00)"

    /// Seconds for `text`: plain non-negative seconds (`12.5`, `90`), or
    /// `mm:ss[.fff]` / `hh:mm:ss[.fff]` where seconds (and minutes when hours
    /// are given) are below 60. Signs, exponents, `inf`, `nan` and empty
    /// fields are refused. Returns nil when `text` is none of these.
    static func seconds(_ text: String) -> Double? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(fields.count), let last = fields.last, let seconds = decimal(last) else { return nil }
        var wholes: [Int] = []
        for field in fields.dropLast() {
            guard !field.isEmpty, field.allSatisfy(\.isASCIIDigit), let value = Int(field) else { return nil }
            wholes.append(value)
        }
        if !wholes.isEmpty {
            guard seconds < 60 else { return nil }
            if wholes.count == 2 { guard wholes[1] < 60 else { return nil } }
        }
        let total = wholes.reduce(0.0) { $0 * 60 + Double($1) } * 60 + seconds
        return wholes.isEmpty ? seconds : total
    }

    /// `digits[.digits]`, nothing else.
    private static func decimal(_ field: Substring) -> Double? {
        let parts = field.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else {
            return nil
        }
        return Double(field)
    }

    /// For `@Option(transform:)`: the seconds, or a usage error naming the forms.
    static func parse(_ text: String) throws -> Double {
        guard let value = seconds(text) else {
            throw ValidationError("'\(text)' is not a time; use \(forms)")
        }
        return value
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
