// harmonia-play on a terminal (issue 5): the status line and the keys, run
// as a user runs them — the built binary on a pseudo-terminal, sound to the
// null output (real time, nothing heard).
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play on a terminal")
struct HarmoniaPlayTerminalTests {
    /// A 30 s sine with a title and an artist, made once per test run by the
    /// ffmpeg command line: long enough to seek 5 s and never end in a test.
    static let long: String = {
        let path = NSTemporaryDirectory() + "harmonia-play-terminal-\(getpid()).flac"
        let result = try? ProcessRunner.run("/usr/bin/env", [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=30",
            "-ac", "2", "-metadata", "title=Long Sine", "-metadata", "artist=Tester", path,
        ])
        precondition(result?.status == 0, "ffmpeg could not make \(path)")
        return path
    }()

    static let showCursor = "\u{1B}[?25h"
    static let hideCursor = "\u{1B}[?25l"

    private func play(_ arguments: [String], columns: UInt16 = 120, environment: [String: String] = [:]) throws -> PseudoTerminal {
        try PseudoTerminal(ProcessRunner.productsDirectory + "/harmonia-play", ["--output", "null"] + arguments,
                           columns: columns, environment: environment)
    }

    /// The status lines drawn after `offset` (each redraw starts with CR, erase line).
    private func statusLines(_ text: String) -> [String] {
        text.components(separatedBy: "\r\u{1B}[K").dropFirst().map {
            String($0.prefix { !$0.isNewline && $0 != "\u{1B}" })
        }.filter { $0.contains(" / ") }
    }

    /// Seconds shown as elapsed in `line` ("0:06.1 / 0:30" → 6.1).
    private func elapsed(_ line: String) -> Double? {
        guard let range = line.range(of: " / ") else { return nil }
        let field = line[..<range.lowerBound].split(separator: " ").last.map(String.init) ?? ""
        let parts = field.split(separator: ":").compactMap { Double($0) }
        guard parts.count == 2 else { return nil }
        return parts[0] * 60 + parts[1]
    }

    @Test("status line: title — artist, bar, elapsed / total, volume, state, i/n; space pauses and resumes; volume and mute keys; ?; q exits 0 and restores the terminal")
    func statusLineAndKeys() throws {
        let pty = try play(["--volume", "50", Self.long])
        let before = pty.initialModes
        try pty.wait(for: "Playing 1/1: Long Sine — Tester (0:30)")
        try pty.wait(for: "Long Sine — Tester  [")
        try pty.wait(for: " / 0:30  vol 50%  playing  1/1")
        #expect(pty.output.hasPrefix(Self.hideCursor))

        var mark = pty.mark
        pty.send(" ")
        try pty.wait(for: "vol 50%  paused  1/1", after: mark)
        mark = pty.mark
        pty.send(" ")
        try pty.wait(for: "  playing  1/1", after: mark)

        mark = pty.mark
        pty.send("+")
        mark = try pty.wait(for: "vol 55%", after: mark)
        pty.send("--")
        mark = try pty.wait(for: "vol 45%", after: mark)
        pty.send("=")
        mark = try pty.wait(for: "vol 50%", after: mark)
        pty.send("m")
        mark = try pty.wait(for: "muted  playing", after: mark)
        pty.send("m")
        mark = try pty.wait(for: "vol 50%  playing", after: mark)
        pty.send("?")
        try pty.wait(for: "q quit", after: mark)

        pty.send("q")
        #expect(try pty.waitForExit() == .exited(0))
        let after = pty.modes()
        #expect(sameModes(before, after))
        #expect(after.c_lflag & tcflag_t(ICANON) != 0)
        #expect(after.c_lflag & tcflag_t(ECHO) != 0)
        #expect(pty.output.hasSuffix("\r\n" + Self.showCursor))
        // Nothing but status lines, the track line and the help: no line broken by another.
        for line in statusLines(pty.output) {
            #expect(line.hasPrefix("Long Sine — Tester  ["), "\(line.debugDescription)")
        }
    }

    @Test("→ / ← seek ±5 s (both arrow encodings), ↓ seeks back to the start, paused")
    func seekKeys() throws {
        let pty = try play([Self.long])
        try pty.wait(for: "  playing  1/1")
        var mark = pty.mark
        pty.send(" ")
        mark = try pty.wait(for: "paused", after: mark)
        let start = try #require(statusLines(pty.output).last.flatMap(elapsed))

        pty.send("\u{1B}[C")
        try pty.wait(after: mark, for: "elapsed +5 s") { text in
            statusLines(text).contains { ($0.contains("paused") && (elapsed($0) ?? 0) > start + 4.9) }
        }
        #expect(statusLines(pty.output(after: mark)).compactMap(elapsed).allSatisfy { abs($0 - (start + 5)) < 0.11 })

        mark = pty.mark
        pty.send("\u{1B}OC")  // the application-cursor form
        try pty.wait(after: mark, for: "elapsed +10 s") { text in
            statusLines(text).contains { (elapsed($0) ?? 0) > start + 9.9 }
        }
        mark = pty.mark
        pty.send("\u{1B}[D")
        try pty.wait(after: mark, for: "elapsed back 5 s") { text in
            statusLines(text).contains { abs((elapsed($0) ?? 0) - (start + 5)) < 0.11 }
        }
        mark = pty.mark
        pty.send("\u{1B}[B")  // -60 s, clamped to the start
        try pty.wait(for: "0:00.0 / 0:30  vol 100%  paused", after: mark)

        pty.send("q")
        #expect(try pty.waitForExit() == .exited(0))
    }

    @Test("n and p: next and previous track; n on the last track ends the queue (exit 0)")
    func nextAndPrevious() throws {
        let short = Fixtures.named("flac_s16_stereo_44k.flac")
        let pty = try play([Self.long, short.path])
        try pty.wait(for: "Long Sine — Tester  [")
        var mark = try pty.wait(for: "  playing  1/2")
        pty.send("n")
        mark = try pty.wait(for: "Playing 2/2: ", after: mark)
        try pty.wait(after: mark, for: "line of track 2") { text in
            statusLines(text).contains { !$0.hasPrefix("Long Sine") && $0.hasSuffix("  2/2") }
        }
        #expect(statusLines(pty.output(after: mark)).allSatisfy { !$0.hasPrefix("Long Sine") })
        mark = pty.mark
        pty.send("p")
        mark = try pty.wait(for: "Playing 1/2: Long Sine", after: mark)
        try pty.wait(for: "Long Sine — Tester  [", after: mark)
        pty.send("n")
        mark = try pty.wait(for: "Playing 2/2: ", after: mark)
        pty.send("n")
        #expect(try pty.waitForExit() == .exited(0))
    }

    @Test("SIGINT and SIGTERM: playback stops, the terminal is restored, exit 130 and 143", arguments: [SIGINT, SIGTERM])
    func signalRestores(_ signo: Int32) throws {
        let pty = try play([Self.long])
        let before = pty.initialModes
        try pty.wait(for: "  playing  1/1")
        #expect(!sameModes(before, pty.modes()))  // key mode: no echo, not canonical
        kill(pty.pid, signo)
        #expect(try pty.waitForExit() == .exited(128 + signo))
        #expect(sameModes(before, pty.modes()))
        #expect(pty.output.hasSuffix("\r\n" + Self.showCursor))
    }

    @Test("a crash (SIGSEGV, SIGABRT) restores the terminal before the process dies of it", arguments: [SIGSEGV, SIGABRT])
    func crashRestores(_ signo: Int32) throws {
        // No backtrace from the Swift runtime: it is slow and beside the point.
        let pty = try play([Self.long], environment: ["SWIFT_BACKTRACE": "enable=no"])
        let before = pty.initialModes
        try pty.wait(for: "  playing  1/1")
        kill(pty.pid, signo)
        #expect(try pty.waitForExit() == .signaled(signo))
        #expect(sameModes(before, pty.modes()))
        #expect(pty.output.contains(Self.showCursor))
    }

    @Test("^C typed on the terminal is SIGINT: exit 130, terminal restored")
    func controlC() throws {
        let pty = try play([Self.long])
        let before = pty.initialModes
        try pty.wait(for: "  playing  1/1")
        pty.send("\u{03}")
        #expect(try pty.waitForExit() == .exited(130))
        #expect(sameModes(before, pty.modes()))
        #expect(pty.output.contains(Self.showCursor))
    }

    @Test("a narrow terminal: the line fits; the title is truncated first, then the bar goes")
    func narrow() throws {
        let eighty = try play([Self.long], columns: 80)
        let forty = try play([Self.long], columns: 40)
        for pty in [eighty, forty] { try pty.wait(for: "  playing  1/1") }
        let line = try #require(statusLines(eighty.output).last)
        #expect(line.count <= 79)
        #expect(line.hasPrefix("Long Sine — Tes…  [-"))
        let short = try #require(statusLines(forty.output).last)
        #expect(short.count <= 39)
        #expect(!short.contains("["))
        for pty in [eighty, forty] {
            pty.send("q")
            #expect(try pty.waitForExit() == .exited(0))
        }
    }

    @Test("SIGWINCH: the line is redrawn at the new width")
    func resize() throws {
        let pty = try play([Self.long])
        try pty.wait(for: "  playing  1/1")
        var mark = pty.mark
        pty.send(" ")  // paused: nothing else redraws
        mark = try pty.wait(for: "  paused  1/1", after: mark)
        #expect(statusLines(pty.output).last?.contains("Long Sine — Tester  [") == true)
        pty.resize(columns: 40)
        try pty.wait(after: mark, for: "a line of 39 columns at most") { text in
            statusLines(text).contains { $0.count <= 39 && $0.hasSuffix("paused  1/1") }
        }
        pty.send("q")
        #expect(try pty.waitForExit() == .exited(0))
    }

    @Test("^Z: the terminal is restored while stopped; on SIGCONT key mode and the line come back")
    func suspendAndContinue() throws {
        let pty = try play([Self.long])
        let before = pty.initialModes
        try pty.wait(for: "  playing  1/1")
        let raw = pty.modes()
        #expect(!sameModes(before, raw))
        pty.send("\u{1A}")
        try pty.wait(for: "stopped, terminal restored") { pty.isStopped && sameModes(before, pty.modes()) }
        let mark = pty.mark
        kill(pty.pid, SIGCONT)
        try pty.wait(for: "key mode again") { sameModes(raw, pty.modes()) }
        try pty.wait(for: "  1/1", after: mark)
        pty.send("q")
        #expect(try pty.waitForExit() == .exited(0))
        #expect(sameModes(before, pty.modes()))
    }

    @Test("the queue plays out: the last line stays, marked stopped, then a newline and the cursor; exit 0")
    func playsOut() throws {
        let short = Fixtures.named("flac_s16_stereo_44k.flac")  // 2 s
        let pty = try play([short.path])
        let before = pty.initialModes
        #expect(try pty.waitForExit() == .exited(0))
        let last = try #require(statusLines(pty.output).last)
        #expect(last.hasSuffix(" / 0:02.0  vol 100%  stopped  1/1"), "\(last); the output's end: \(pty.output.suffix(400).debugDescription)")
        #expect(pty.output.hasSuffix("stopped  1/1\r\n" + Self.showCursor))
        #expect(sameModes(before, pty.modes()))
    }

    @Test("q with a failed input exits 1; --quiet on a terminal draws nothing")
    func quitAfterFailureAndQuiet() throws {
        let missing = Fixtures.root + "/audio/missing-\(getpid()).flac"
        let pty = try play([missing, Self.long])
        try pty.wait(for: "harmonia-play: \(missing): notFound: ")
        try pty.wait(for: "  playing  2/2")
        pty.send("q")
        #expect(try pty.waitForExit() == .exited(1))

        let quiet = try play(["--quiet", "--end", "0.3", Self.long])
        #expect(try quiet.waitForExit() == .exited(0))
        #expect(quiet.output.isEmpty)
    }

    @Test("without a terminal (pipes): today's output, no escape sequence; --help lists the keys")
    func noTerminal() throws {
        let help = try ProcessRunner.harmoniaPlay(["play", "--help"])
        for key in ["space pause/resume", "←/→ seek -/+5 s", "↓/↑ seek -/+60 s", "n/p next/previous", "m mute", "q quit", "? this help"] {
            #expect(help.stdoutText.contains(key), "\(key)")
        }

        let result = try ProcessRunner.harmoniaPlay(["--output", "null", "--end", "0.3", Self.long])
        #expect(result.status == 0)
        #expect(result.stdoutText == "Playing 1/1: Long Sine — Tester (0:00.3)\n")
        #expect(!result.stdoutText.contains("\u{1B}"))
        #expect(result.stderrText.isEmpty)
    }
}
