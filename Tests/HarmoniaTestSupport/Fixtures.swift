// The fixture corpus (Tests/Fixtures, made by generate.sh) and its manifest.
import Foundation

/// One entry of Tests/Fixtures/manifest.json.
public struct Fixture: Decodable, Sendable, CustomStringConvertible {
    public let file: String
    public let container: String
    public let codec: String
    public let sampleRate: Int
    public let channels: Int
    /// Exact frames of the encoded source.
    public let frames: Int64
    public let bitDepth: Int
    public let lossless: Bool
    /// Frames the ffmpeg command line decodes (more than `frames` for AAC in
    /// MP4: it keeps the end padding the container excludes).
    public let cliFrames: Int64
    /// CLI frames that precede frame 0 (0 with this FFmpeg).
    public let cliOffset: Int64
    public let tags: [String: TagValue]?

    public var path: String { Fixtures.root + "/" + file }
    public var name: String { (file as NSString).lastPathComponent }
    public var description: String { name }
}

/// A tag value in the manifest: string, integer or number.
public enum TagValue: Decodable, Sendable, Equatable {
    case string(String)
    case int(Int)
    case double(Double)

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let i = try? c.decode(Int.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else { self = .string(try c.decode(String.self)) }
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var int: Int? { if case .int(let i) = self { i } else { nil } }
    public var double: Double? {
        switch self {
        case .double(let d): d
        case .int(let i): Double(i)
        case .string: nil
        }
    }
}

/// One bad input of the manifest.
public struct BadInput: Decodable, Sendable, CustomStringConvertible {
    public let file: String
    public let kind: String
    public let source: String?
    public var path: String { Fixtures.root + "/" + file }
    public var name: String { (file as NSString).lastPathComponent }
    public var description: String { name }
}

public struct FixtureManifest: Decodable, Sendable {
    public let fixtures: [Fixture]
    public let bad: [BadInput]
    public let artwork: Artwork
    public struct Artwork: Decodable, Sendable {
        public let bytes: Int
        public let sha256: String
    }
}

public enum Fixtures {
    /// The repository's top folder.
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url.path }
        }
        fatalError("Package.swift not found above \(#filePath)")
    }()

    /// Tests/Fixtures.
    public static let root = repositoryRoot + "/Tests/Fixtures"

    public static let manifest: FixtureManifest = {
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: root + "/manifest.json"))
            return try JSONDecoder().decode(FixtureManifest.self, from: data)
        } catch {
            fatalError("cannot read \(root)/manifest.json: \(error)")
        }
    }()

    public static var all: [Fixture] { manifest.fixtures }
    public static var bad: [BadInput] { manifest.bad }

    public static func named(_ name: String) -> Fixture {
        guard let fixture = all.first(where: { $0.name == name }) else { fatalError("no fixture \(name)") }
        return fixture
    }

    /// The fixture decoded by an independent decoder, the ffmpeg command line
    /// (`ffmpeg -i FILE -f f32le -`), as interleaved floats. Cached per process.
    public static func cliReference(_ path: String) throws -> [Float] {
        if let cached = referenceCache.withLock({ $0[path] }) { return cached }
        let result = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-f", "f32le", "-"])
        guard result.status == 0 else {
            throw FixtureError("ffmpeg could not decode \(path): \(result.stderrText)")
        }
        let samples = result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        referenceCache.withLock { $0[path] = samples }
        return samples
    }

    private static let referenceCache = LockedValue<[String: [Float]]>([:])
}

public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
