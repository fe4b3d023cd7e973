// Request lines, arguments and ACK lines — specs/mpd-protocol.md §Request lines, §Arguments, §Errors.
// The expected answers were observed on MPD 0.23.12 (Tests/MPD/mpd_diff.py serve, raw lines).
import Testing
@testable import HarmoniaMPD

private func parse(_ line: String) -> MPDParsedLine { MPDRequest.parse(line: Array(line.utf8)) }
private func parse(bytes: [UInt8]) -> MPDParsedLine { MPDRequest.parse(line: bytes) }

/// The ACK line MPD gives for a line that fails to tokenize (index 0).
private func ack(_ line: String) -> String? {
    switch parse(line) {
    case .error(let e), .errorThenClose(let e): e.line(command: "?", listIndex: 0)
    default: nil
    }
}

@Suite struct MPDTokenizerTests {
    @Test func plainWordsAndQuotedArguments() {
        #expect(parse("ping") == .request(MPDRequest("ping")))
        #expect(parse("find Artist x") == .request(MPDRequest("find", ["Artist", "x"])))
        #expect(parse("find \"a b\" c") == .request(MPDRequest("find", ["a b", "c"])))
        #expect(parse(#"lsinfo """#) == .request(MPDRequest("lsinfo", [""])))
        #expect(parse(#"find "a\\b\"c" x"#) == .request(MPDRequest("find", [#"a\b"c"#, "x"])))
        #expect(parse(#"find Artist a\b"#) == .request(MPDRequest("find", ["Artist", #"a\b"#])))
        #expect(parse("add_tag1 x") == .request(MPDRequest("add_tag1", ["x"])))
    }

    @Test func separatorsAreAnyControlByteOrSpace() {
        #expect(parse("find\tArtist\tx") == .request(MPDRequest("find", ["Artist", "x"])))
        #expect(parse("lsinfo \"x\"\t\"y\"") == .request(MPDRequest("lsinfo", ["x", "y"])))
        #expect(parse(bytes: Array("find Artist".utf8) + [0x01] + Array("x".utf8)) == .request(MPDRequest("find", ["Artist", "x"])))
        // Trailing bytes ≤ 0x20 (\r, tabs, control bytes) are dropped, as MPD's StripRight.
        #expect(parse("ping\r") == .request(MPDRequest("ping")))
        #expect(parse("ping  \t") == .request(MPDRequest("ping")))
        #expect(parse(bytes: Array("ping ".utf8) + [0x01]) == .request(MPDRequest("ping")))
    }

    @Test func aNulByteEndsTheLine() {
        #expect(parse(bytes: Array("ping".utf8) + [0] + Array("x".utf8)) == .request(MPDRequest("ping")))
    }

    @Test func nonASCIIBytesAreUnquotedCharacters() {
        #expect(parse("find Artist Ünïcödé") == .request(MPDRequest("find", ["Artist", "Ünïcödé"])))
        // Invalid UTF-8 is accepted as MPD does (bytes > 0x20), replaced in the String.
        #expect(parse(bytes: Array("find Artist ".utf8) + [0x80, 0xFF]) == .request(MPDRequest("find", ["Artist", "\u{FFFD}\u{FFFD}"])))
    }

    @Test func tokenizerErrorsAsMPDGivesThem() {
        #expect(ack(#"find "unterminated"#) == #"ACK [5@0] {} Missing closing '"'"#)
        #expect(ack(#"find "abc\"#) == #"ACK [5@0] {} Missing closing '"'"#)
        #expect(ack(#"find "a"b"#) == #"ACK [5@0] {} Space expected after closing '"'"#)
        #expect(ack(#"find a"b"#) == "ACK [5@0] {} Invalid unquoted character")
        #expect(ack("find 'x'") == "ACK [5@0] {} Invalid unquoted character")
        #expect(ack("pi-ng") == "ACK [5@0] {} Invalid word character")
        #expect(ack(#"ping"x""#) == "ACK [5@0] {} Invalid word character")
    }

    @Test func aBadCommandNameClosesAfterItsAnswer() {
        guard case .errorThenClose = parse("pi-ng") else { Issue.record("expected errorThenClose"); return }
        guard case .error = parse(#"find "x"#) else { Issue.record("expected error"); return }
    }

    @Test func linesNotStartingWithALowercaseLetterCloseSilently() {
        #expect(parse("") == .close)
        #expect(parse(" ping") == .close)
        #expect(parse("Ping") == .close)
        #expect(parse(#""ping""#) == .close)
        #expect(parse("GET / HTTP/1.1") == .close)
    }

    @Test func argumentCountLimitIsMPDs() {
        let sixtyThree = "ping" + String(repeating: " a", count: 63)
        let sixtyFour = "ping" + String(repeating: " a", count: 64)
        #expect(parse(sixtyThree) == .request(MPDRequest("ping", Array(repeating: "a", count: 63))))
        #expect(ack(sixtyFour) == "ACK [2@0] {} Too many arguments")
        #expect(ack("ping" + String(repeating: " a", count: 10_000)) == "ACK [2@0] {} Too many arguments")
    }
}

@Suite struct MPDLineBufferTests {
    @Test func splitsLinesAcrossReads() {
        var buffer = MPDLineBuffer(maxLineBytes: 100)
        buffer.append(Array("pi".utf8))
        #expect(buffer.next() == nil)
        buffer.append(Array("ng\nstat".utf8))
        #expect(buffer.next() == .line(Array("ping".utf8)))
        #expect(buffer.next() == nil)
        buffer.append(Array("us\n\n".utf8))
        #expect(buffer.next() == .line(Array("status".utf8)))
        #expect(buffer.next() == .line([]))
        #expect(buffer.pendingBytes == 0)
    }

    @Test func aLineOverTheLimitIsReportedWithoutItsNewline() {
        var buffer = MPDLineBuffer(maxLineBytes: 10)
        buffer.append(Array(repeating: 0x61, count: 10))
        #expect(buffer.next() == nil)
        buffer.append([0x61])
        #expect(buffer.next() == .tooLong)
        var other = MPDLineBuffer(maxLineBytes: 10)
        other.append(Array(repeating: 0x61, count: 11) + [0x0A])
        #expect(other.next() == .tooLong)
    }

    @Test func manySmallLinesStayCompact() {
        var buffer = MPDLineBuffer(maxLineBytes: 1 << 20)
        var count = 0
        for _ in 0..<2000 {
            buffer.append(Array(String(repeating: "ping\n", count: 100).utf8))
            while case .line = buffer.next() { count += 1 }
        }
        #expect(count == 200_000)
        #expect(buffer.pendingBytes == 0)
    }
}

@Suite struct MPDArgumentTests {
    private func message<T>(_ body: () throws -> T) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as MPDError {
            return "\(error.ack.rawValue) \(error.message)"
        } catch {
            return "unexpected \(error)"
        }
    }

    @Test func integers() throws {
        #expect(try MPDArgument.int("42") == 42)
        #expect(try MPDArgument.int(" 7") == 7)  // strtol skips blanks
        #expect(message { try MPDArgument.int("x") } == "2 Integer expected: x")
        #expect(message { try MPDArgument.int("5x") } == "2 Integer expected: 5x")
        #expect(message { try MPDArgument.int("") } == "2 Integer expected: ")
        #expect(message { try MPDArgument.int("-5", in: 0...100) } == "2 Number too large: -5")
        #expect(message { try MPDArgument.unsigned("-5") } == "2 Number too large: -5")  // strtoul wraps
        #expect(message { try MPDArgument.unsigned("2147483648", max: 100) } == "2 Number too large: 2147483648")
        #expect(message { try MPDArgument.unsigned("99999999999999999999999") } == "2 Number too large: 99999999999999999999999")
        #expect(try MPDArgument.uint32("4294967297") == 1)  // as MPD: strtoul then a cast
    }

    @Test func ranges() throws {
        #expect(try MPDArgument.range("3") == .single(3))
        #expect(try MPDArgument.range("2:5") == MPDRange(start: 2, end: 5))
        #expect(try MPDArgument.range("2:") == MPDRange(start: 2, end: nil))
        #expect(try MPDArgument.range("-1") == .all)
        #expect(message { try MPDArgument.range("0:x") } == "2 Integer or range expected: 0:x")
        #expect(message { try MPDArgument.range("x") } == "2 Integer or range expected: x")
        #expect(message { try MPDArgument.range("-5") } == "2 Number is negative: -5")
        #expect(message { try MPDArgument.range("1:-5") } == "2 Number is negative: 1:-5")
        #expect(message { try MPDArgument.range("2147483648") } == "2 Number too large: 2147483648")
        #expect(message { try MPDArgument.range("5:2") } == "2 Malformed range: 5:2")
    }

    @Test func booleansAndFloats() throws {
        #expect(try MPDArgument.bool("1"))
        #expect(try MPDArgument.bool("01"))
        #expect(try !MPDArgument.bool(" 0"))
        #expect(message { try MPDArgument.bool("2") } == "2 Boolean (0/1) expected: 2")
        #expect(message { try MPDArgument.bool("yes") } == "2 Boolean (0/1) expected: yes")
        #expect(try MPDArgument.float("1.5") == 1.5)
        #expect(try MPDArgument.float("0x10") == 16)
        #expect(message { try MPDArgument.float("abc") } == "2 Float expected: abc")
        #expect(try MPDArgument.songTime("2.5") == 2.5)
        #expect(message { try MPDArgument.songTime("-1") } == "2 Negative value not allowed: -1")
        #expect(try MPDArgument.signedSongTime("-1.5") == -1.5)
    }

    @Test func longValuesAreCutAsMPDsBufferDoes() {
        let value = String(repeating: "x", count: 1000)
        #expect(message { try MPDArgument.int(value) }?.utf8.count == 2 + 255)
    }
}

@Suite struct MPDErrorTests {
    @Test func ackLines() {
        #expect(MPDError.unknownCommand("x").line(command: "x", listIndex: 0) == #"ACK [5@0] {} unknown command "x""#)
        #expect(MPDError.permissionDenied("add").line(command: "add", listIndex: 2) == #"ACK [4@2] {add} you don't have permission for "add""#)
        #expect(MPDError.badSongIndex.line(command: "play", listIndex: 0) == "ACK [2@0] {play} Bad song index")
        #expect(MPDError.noSuchSong.line(command: "playid", listIndex: 0) == "ACK [50@0] {playid} No such song")
        #expect(MPDError(.updateAlready, "Already updating").line(command: "update", listIndex: 1) == "ACK [54@1] {update} Already updating")
    }

    @Test func ackCodesAreMPDs() {
        #expect(MPDAck.allCases.map(\.rawValue) == [1, 2, 3, 4, 5, 50, 51, 52, 53, 54, 55, 56])
    }

    @Test func coreErrorsMapToAcks() {
        #expect(MPDError(.notFound("x")).ack == .noExist)
        #expect(MPDError(.invalidArgument("x")).ack == .arg)
        #expect(MPDError(.ioError("x")).ack == .system)
        #expect(MPDError(.decodeError("x")).ack == .unknown)
    }

    @Test func permissionNames() {
        #expect(MPDPermissions(names: "read,add") == [.read, .add])
        #expect(MPDPermissions(names: "control") == [.control, .player])
        #expect(MPDPermissions(names: "read,bogus") == nil)
        #expect(MPDPermissions(names: "") == [])
    }

    @Test func subsystemsAndTagNames() {
        #expect(MPDSubsystems(name: "Player") == .player)
        #expect(MPDSubsystems(name: "stored_playlist") == .storedPlaylist)
        #expect(MPDSubsystems(name: "bogus") == nil)
        #expect(MPDSubsystems([.player, .database, .mixer]).memberNames == ["database", "player", "mixer"])
        #expect(MPDTagType(name: "albumartist") == .albumArtist)
        #expect(MPDTagType(name: "musicbrainz_trackid") == .musicBrainzTrackID)
        #expect(MPDTagType.allCases.count == 31)
        #expect(MPDTagMask.library.tags.map(\.name) == [
            "Artist", "Album", "AlbumArtist", "Title", "Track", "Genre", "Date", "Composer", "Performer", "Comment", "Disc",
            "MUSICBRAINZ_ARTISTID", "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID",
            "MUSICBRAINZ_RELEASETRACKID", "MUSICBRAINZ_WORKID",
        ])
    }
}
