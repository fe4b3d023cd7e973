// harmonia-play vectors, run as a user runs it: every vector in specs/vectors
// must pass (so `swift test`, and with it `make test`, runs them all), and the
// runner itself fails loudly on what it cannot run or what does not hold.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play vectors")
struct HarmoniaPlayVectorsTests {
    /// specs/vectors/*.json, sorted.
    static var vectorFiles: [String] {
        let folder = Fixtures.repositoryRoot + "/specs/vectors"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { folder + "/" + $0 }
    }

    /// A scratch folder holding `files` (name → text), removed by `body`'s end.
    private func withFiles<T>(_ files: [String: String], _ body: (String) throws -> T) throws -> T {
        let folder = NSTemporaryDirectory() + "harmonia-vectors-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (name, text) in files {
            try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/" + name))
        }
        return try body(folder)
    }

    private func lines(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init)
    }

    private static let wav = Fixtures.named("wav_s16_stereo_44k.wav").path

    @Test("every vector in specs/vectors passes; the summary counts them")
    func allVectorsPass() throws {
        let files = Self.vectorFiles
        #expect(files.count >= 8, "specs/vectors holds the vector files")
        let result = try ProcessRunner.harmoniaPlay(["vectors"] + files)
        let out = lines(result.stdoutText)
        let failures = out.filter { $0.hasPrefix("FAIL ") }
        #expect(failures.isEmpty, "\(failures.count) failing vector case(s):\n\(failures.joined(separator: "\n"))")
        #expect(result.status == 0, "stderr: \(result.stderrText)")
        #expect(result.stderrText.isEmpty)
        let passed = out.filter { $0.hasPrefix("PASS ") }.count
        #expect(passed + failures.count > 300, "every vector case ran")
        #expect(out.last == "\(passed) passed, \(failures.count) failed")
        #expect(out.filter { $0.hasPrefix("# ") }.count == files.count, "one header line per file")
    }

    @Test("the same vectors give the same output every run (manual clock, manual-paced output)")
    func deterministic() throws {
        let file = Fixtures.repositoryRoot + "/specs/vectors/position.json"
        let first = try ProcessRunner.harmoniaPlay(["vectors", file])
        let second = try ProcessRunner.harmoniaPlay(["vectors", file])
        #expect(first.stdoutText == second.stdoutText)
        #expect(first.stdoutText.contains("PASS playing_advances"))
    }

    @Test("fixture paths are relative to the vector file; {NAME}, action or type, args nested or beside")
    func formatVariants() throws {
        let vector = """
            {"vector_name": "variants", "fixtures": {"clip": "sub/clip.wav", "gone": "sub/none.wav"},
             "test_cases": [
              {"name": "nested_args", "operations": [{"action": "load", "args": {"url": "{clip}"}},
                                                     {"action": "seek", "args": {"to": 0.25}}],
               "assertions": [{"type": "position_near", "target": 0.25, "tolerance_ms": 1},
                              {"type": "state_equals", "expected": "paused"}]},
              {"name": "flat_args", "operations": [{"type": "load", "url": "{clip}"}, {"type": "play"},
                                                   {"type": "wait", "seconds": 0.1},
                                                   {"action": "wait", "type": "wait", "ms": 100}],
               "assertions": [{"type": "position_near", "target": 0.2, "tolerance_ms": 1},
                              {"type": "duration_equals", "expected": 1.0}]},
              {"name": "missing_fixture", "operations": [{"action": "load", "args": {"url": "{gone}"}}],
               "assertions": [{"type": "error_thrown", "category": "notFound", "message_contains": "{gone}"},
                              {"type": "state_equals", "expected": "error"}]}
             ]}
            """
        try withFiles(["v.json": vector]) { folder in
            try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Self.wav, toPath: folder + "/sub/clip.wav")
            // Run from another folder: paths must not depend on the working directory.
            let result = try ProcessRunner.harmoniaPlay(["vectors", folder + "/v.json"])
            #expect(result.status == 0, "\(result.stdoutText)")
            #expect(lines(result.stdoutText) == ["# variants (\(folder)/v.json)", "PASS nested_args", "PASS flat_args",
                                                 "PASS missing_fixture", "3 passed, 0 failed"])
        }
    }

    @Test("an unknown operation or assertion fails its case, naming it; exit 1")
    func unknownKinds() throws {
        let vector = """
            {"fixtures": {"clip": "\(Self.wav)"}, "test_cases": [
              {"name": "unknown_op", "operations": [{"action": "load", "args": {"url": "{clip}"}}, {"action": "rewind"}],
               "assertions": [{"type": "state_equals", "expected": "paused"}]},
              {"name": "unknown_assertion", "operations": [{"action": "load", "args": {"url": "{clip}"}}],
               "assertions": [{"type": "volume_equals", "expected": 1}]},
              {"name": "fine", "operations": [], "assertions": [{"type": "state_equals", "expected": "stopped"}]}
            ]}
            """
        try withFiles(["unknown.json": vector]) { folder in
            let result = try ProcessRunner.harmoniaPlay(["vectors", folder + "/unknown.json"])
            #expect(result.status == 1)
            let out = lines(result.stdoutText)
            #expect(out.contains("FAIL unknown_op: operation 2: unknown operation 'rewind'"), "\(out)")
            #expect(out.contains("FAIL unknown_assertion: assertion 1 (volume_equals): unknown assertion 'volume_equals'"), "\(out)")
            #expect(out.contains("PASS fine"))
            #expect(out.last == "1 passed, 2 failed")
        }
    }

    @Test("a wrong expectation fails its case with what was found; exit 1")
    func wrongExpectations() throws {
        let vector = """
            {"fixtures": {"clip": "\(Self.wav)", "typo": "\(Self.wav)"}, "test_cases": [
              {"name": "wrong_state", "operations": [{"action": "load", "args": {"url": "{clip}"}}],
               "assertions": [{"type": "state_equals", "expected": "playing"}]},
              {"name": "wrong_position", "operations": [{"action": "load", "args": {"url": "{clip}"}},
                                                        {"action": "play"}, {"action": "wait", "args": {"ms": 200}}],
               "assertions": [{"type": "position_near", "target": 0.3, "tolerance_ms": 1}]},
              {"name": "nothing_threw", "operations": [{"action": "load", "args": {"url": "{clip}"}}],
               "assertions": [{"type": "error_thrown", "category": "notFound"}]},
              {"name": "wrong_category", "operations": [{"action": "play"}],
               "assertions": [{"type": "error_thrown", "category": "notFound"}]},
              {"name": "wrong_rate", "operations": [{"action": "load", "args": {"url": "{clip}"}}],
               "assertions": [{"type": "sample_rate_equals", "expected": 48000}, {"type": "channels_equals", "expected": 2}]},
              {"name": "wrong_tag", "operations": [{"action": "load", "args": {"url": "{clip}"}}],
               "assertions": [{"type": "tags_equal", "expected": {"title": "Not There"}}]},
              {"name": "bad_fixture_name", "operations": [{"action": "load", "args": {"url": "{clipp}"}}], "assertions": []}
            ]}
            """
        try withFiles(["wrong.json": vector]) { folder in
            let result = try ProcessRunner.harmoniaPlay(["vectors", folder + "/wrong.json"])
            #expect(result.status == 1)
            let out = lines(result.stdoutText)
            #expect(out.contains("FAIL wrong_state: assertion 1 (state_equals): expected state playing, the state is paused"), "\(out)")
            #expect(out.contains { $0.hasPrefix("FAIL wrong_position: assertion 1 (position_near): expected position 0.3 s ± 1.0 ms, it is 0.2 s") }, "\(out)")
            #expect(out.contains("FAIL nothing_threw: assertion 1 (error_thrown): expected notFound, but no operation threw"), "\(out)")
            #expect(out.contains { $0.hasPrefix("FAIL wrong_category: assertion 1 (error_thrown): expected notFound, the most recent error was invalidState: ") }, "\(out)")
            #expect(out.contains("FAIL wrong_rate: assertion 1 (sample_rate_equals): expected 48000.0 Hz, the track is 44100.0 Hz"), "\(out)")
            #expect(out.contains("FAIL wrong_tag: assertion 1 (tags_equal): title: expected \"Not There\", read null"), "\(out)")
            #expect(out.contains("FAIL bad_fixture_name: operation 1: '{clipp}' names no fixture of this file"), "\(out)")
            #expect(out.last == "0 passed, 7 failed")
        }
    }

    @Test("a file that cannot be read or parsed: a message naming it on stderr, exit 1; the other files still run")
    func unusableFiles() throws {
        let good = """
            {"test_cases": [{"name": "ok", "operations": [{"action": "stop"}],
                             "assertions": [{"type": "state_equals", "expected": "stopped"}]}]}
            """
        try withFiles(["good.json": good, "broken.json": "{\"test_cases\": [", "list.json": "[]",
                       "nocases.json": "{\"vector_name\": \"x\"}"]) { folder in
            let missing = folder + "/missing.json"
            let result = try ProcessRunner.harmoniaPlay(["vectors", missing, folder + "/broken.json", folder + "/list.json",
                                                         folder + "/nocases.json", folder, folder + "/good.json"])
            #expect(result.status == 1)
            let errors = lines(result.stderrText)
            #expect(errors.contains("harmonia-play: \(missing): no such file"), "\(errors)")
            #expect(errors.contains { $0.hasPrefix("harmonia-play: \(folder)/broken.json: not valid JSON (") }, "\(errors)")
            #expect(errors.contains("harmonia-play: \(folder)/list.json: the top level is not a JSON object"), "\(errors)")
            #expect(errors.contains("harmonia-play: \(folder)/nocases.json: no \"test_cases\" array"), "\(errors)")
            #expect(errors.contains("harmonia-play: \(folder): cannot be read"), "\(errors)")
            #expect(lines(result.stdoutText).suffix(2) == ["PASS ok", "1 passed, 0 failed"])
        }
    }

    @Test("usage errors exit 2; --help says the clock is manual")
    func usage() throws {
        #expect(try ProcessRunner.harmoniaPlay(["vectors"]).status == 2)
        let help = try ProcessRunner.harmoniaPlay(["vectors", "--help"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("manual clock"))
    }
}
