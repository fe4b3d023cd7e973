// The specs and the code must not drift: every spec section a source file
// cites exists, every port and model has its section, and the core imports
// no C library (specs/README.md).
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("Specs and code agree")
struct SpecConsistencyTests {
    static let root = Fixtures.repositoryRoot

    static func swiftFiles(under folder: String) -> [String] {
        let base = root + "/" + folder
        let items = FileManager.default.enumerator(atPath: base)?.compactMap { $0 as? String } ?? []
        return items.filter { $0.hasSuffix(".swift") }.map { base + "/" + $0 }.sorted()
    }

    /// Heading titles of a spec file ("## DecoderPort" → "DecoderPort").
    static func headings(_ spec: String) throws -> Set<String> {
        let text = try String(contentsOfFile: root + "/specs/" + spec, encoding: .utf8)
        return Set(text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("#") else { return nil }
            return line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
        })
    }

    @Test("every 'specs/FILE.md §Section (Sub, Sub)' a source cites names a heading of that file")
    func citedSectionsExist() throws {
        let pattern = try NSRegularExpression(pattern: #"specs/([a-z-]+\.md) §([^\s(.,)]+(?:\([^)]*\))?)(?: \(([^)]*)\))?"#)
        var citations = 0
        for file in Self.swiftFiles(under: "Sources") {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let spec = String(text[Range(match.range(at: 1), in: text)!])
                var sections = [String(text[Range(match.range(at: 2), in: text)!])]
                if let subs = Range(match.range(at: 3), in: text) {
                    sections += text[subs].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                }
                let known = try Self.headings(spec)
                // A heading of several words is cited whole: the text after § starts with it.
                let after = text[Range(match.range(at: 2), in: text)!.lowerBound...].prefix { $0 != "\n" }
                if known.contains(where: { $0.contains(" ") && after.hasPrefix($0) }) {
                    citations += 1
                    continue
                }
                for section in sections {
                    citations += 1
                    #expect(known.contains(section), "\(file): cites specs/\(spec) §\(section), which has no such heading")
                }
            }
        }
        #expect(citations >= 15)
    }

    @Test("every port protocol and model type has its own section")
    func portsAndModelsDocumented() throws {
        let declaration = try NSRegularExpression(pattern: #"public (?:protocol|struct|enum|final class) ([A-Z]\w+)"#)
        for (folder, spec) in [("Sources/HarmoniaCore/Ports", "ports.md"), ("Sources/HarmoniaCore/Models", "models.md"),
                              ("Sources/HarmoniaCore/Services", "services.md")] {
            let known = try Self.headings(spec)
            for file in Self.swiftFiles(under: folder) {
                let text = try String(contentsOfFile: file, encoding: .utf8)
                for match in declaration.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let name = String(text[Range(match.range(at: 1), in: text)!])
                    if name == "DecodeHandle" || name == "Category" { continue }  // described inside their port/model
                    #expect(known.contains(name), "\(name) (\(file)) has no section in specs/\(spec)")
                }
            }
        }
    }

    @Test("every requirement of a public protocol in Ports/ and Services/ appears in a spec's Swift listing")
    func requirementsListed() throws {
        // The ```swift blocks of the specs that list the protocols.
        var listings = ""
        for spec in ["ports.md", "realtime.md", "services.md"] {
            let text = try String(contentsOfFile: Self.root + "/specs/" + spec, encoding: .utf8)
            let blocks = text.components(separatedBy: "```swift").dropFirst().map { $0.components(separatedBy: "```")[0] }
            listings += blocks.joined(separator: "\n")
        }
        let proto = try NSRegularExpression(pattern: #"public protocol (\w+)[^{]*\{(.*?)\n\}"#, options: [.dotMatchesLineSeparators])
        let requirement = try NSRegularExpression(pattern: #"^\s*(?:func (\w+)\(|var (\w+):)"#, options: [.anchorsMatchLines])
        var checked = 0
        for file in Self.swiftFiles(under: "Sources/HarmoniaCore/Ports") + Self.swiftFiles(under: "Sources/HarmoniaCore/Services") {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            for match in proto.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let name = String(text[Range(match.range(at: 1), in: text)!])
                let body = String(text[Range(match.range(at: 2), in: text)!])
                for req in requirement.matches(in: body, range: NSRange(body.startIndex..., in: body)) {
                    let isFunc = req.range(at: 1).location != NSNotFound
                    let member = String(body[Range(req.range(at: isFunc ? 1 : 2), in: body)!])
                    checked += 1
                    let listed = listings.contains(isFunc ? "func \(member)(" : "var \(member):")
                    #expect(listed, "\(name).\(member) (\(file)) is in no spec's Swift listing")
                }
            }
        }
        #expect(checked >= 40)
    }

    @Test("HarmoniaCore imports no C library: adapters live in their own modules")
    func coreIsPlatformNeutral() throws {
        for file in Self.swiftFiles(under: "Sources/HarmoniaCore") {
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!text.contains("import CFFmpeg") && !text.contains("import CPulseAudio") && !text.contains("import CDBus"), "\(file)")
        }
    }
}
