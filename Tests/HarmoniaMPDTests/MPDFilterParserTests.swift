// Filters — specs/mpd-protocol.md §Filters. Error messages as MPD 0.23.12 gives them
// (observed with `find "…"` against a private mpd; every filter error is ACK 2).
import HarmoniaLibrary
import Testing
@testable import HarmoniaMPD

private func find(_ arguments: String...) throws(MPDError) -> LibraryFilter {
    try MPDFilterParser.parse(arguments, foldCase: false)
}

private func search(_ arguments: String...) throws(MPDError) -> LibraryFilter {
    try MPDFilterParser.parse(arguments, foldCase: true)
}

private func failure(_ arguments: String...) -> String? {
    do {
        _ = try MPDFilterParser.parse(arguments, foldCase: false)
        return nil
    } catch {
        return error.ack == .arg ? error.message : "ack \(error.ack.rawValue): \(error.message)"
    }
}

@Suite struct MPDFilterExpressionTests {
    @Test func comparisons() throws {
        #expect(try find("(Artist == 'A')") == .tag(.artist, TagMatch(.equals, "A")))
        #expect(try find("(Artist != \"A\")") == .tag(.artist, TagMatch(.equals, "A", negated: true)))
        #expect(try find("(Title contains 'x')") == .tag(.title, TagMatch(.contains, "x")))
        #expect(try find("(Title CONTAINS 'x')") == .tag(.title, TagMatch(.contains, "x")))
        #expect(try find("(Title !contains 'x')") == .tag(.title, TagMatch(.contains, "x", negated: true)))
        #expect(try find("(Title =~ '^Op')") == .tag(.title, TagMatch(.regex, "^Op")))
        #expect(try find("(Title !~ '^Op')") == .tag(.title, TagMatch(.regex, "^Op", negated: true)))
        #expect(try find("(albumartist == 'A')") == .tag(.albumArtist, TagMatch(.equals, "A")))
        #expect(try find("( Artist == 'A' )") == .tag(.artist, TagMatch(.equals, "A")))
        #expect(try find("(Artist=='A')") == .tag(.artist, TagMatch(.equals, "A")))
        #expect(try find("(Artist == 'A') ") == .tag(.artist, TagMatch(.equals, "A")))
    }

    @Test func searchFoldsCaseWithoutChangingTheOperator() throws {
        #expect(try search("(Artist == 'a')") == .tag(.artist, TagMatch(.equals, "a", foldCase: true)))
        #expect(try search("(Title =~ '^op')") == .tag(.title, TagMatch(.regex, "^op", foldCase: true)))
    }

    @Test func specialFilterTypes() throws {
        #expect(try find("(file == 'a/b.flac')") == .file(TagMatch(.equals, "a/b.flac")))
        #expect(try find("(any contains 'azz')") == .anyTag(TagMatch(.contains, "azz")))
        #expect(try find("(base 'loose')") == .base("loose"))
        #expect(try find("(base \"loose\")") == .base("loose"))
        #expect(try find("(modified-since '1700000001')") == .modifiedSince(1_700_000_001))
        #expect(try find("(modified-since '2023-11-14T22:13:20Z')") == .modifiedSince(1_700_000_000))
        #expect(try find("(AudioFormat == '44100:16:2')") == .audioFormat(TagMatch(.equals, "44100:16:2")))
        #expect(try find("(AudioFormat == '44100:24_3:2')") == .audioFormat(TagMatch(.equals, "44100:24:2")))
        #expect(try find("(AudioFormat =~ '*:24:*')") == .audioFormat(TagMatch(.regex, "^[^:]+:24:[^:]+$")))
        #expect(try find("(AudioFormat =~ '48000:f:2')") == .audioFormat(TagMatch(.equals, "48000:f:2")))
    }

    @Test func negationAndConjunction() throws {
        let a = LibraryFilter.tag(.artist, TagMatch(.equals, "A"))
        let t = LibraryFilter.tag(.track, TagMatch(.equals, "2"))
        #expect(try find("(!(Artist == 'A'))") == .not(a))
        #expect(try find("(! (Artist == 'A') )") == .not(a))
        #expect(try find("((Artist == 'A') AND (Track == '2'))") == .and([a, t]))
        #expect(try find("((Artist == 'A') AND (Track == '2') AND (Artist == 'A'))") == .and([a, t, a]))
        #expect(try find("((Artist == 'A') AND ((Track == '2') AND (Artist == 'A')))") == .and([a, .and([t, a])]))
        #expect(try find("((Artist == 'A'))") == a)
    }

    @Test func quotingInsideExpressions() throws {
        // The argument is already unquoted by the tokenizer: these are the expression's own escapes.
        #expect(try find(#"(Title == 'Quote\'s "Song" \\ back')"#) == .tag(.title, TagMatch(.equals, #"Quote's "Song" \ back"#)))
        #expect(try find(#"(Title == "a\"b")"#) == .tag(.title, TagMatch(.equals, #"a"b"#)))
        #expect(try find(#"(Title == 'a\b')"#) == .tag(.title, TagMatch(.equals, "ab")))
    }

    @Test func tagsTheLibraryDoesNotIndexAreAbsentFromEverySong() throws {
        // MPD: an absent tag matches when the filter's value is empty (any operator), negation applied.
        #expect(try find("(Conductor == '')") == .and([]))
        #expect(try find("(Conductor != '')") == .not(.and([])))
        #expect(try find("(conductor == 'x')") == .not(.and([])))
        #expect(try find("(Conductor =~ '^$')") == .not(.and([])))
        #expect(try find("(Label != 'x')") == .and([]))
        // Performer and the MusicBrainz ids are indexed (with every value).
        #expect(try find("(Performer == 'x')") == .tag(.performer, TagMatch(.equals, "x")))
        #expect(try find("(MUSICBRAINZ_TRACKID != 'x')") == .tag(.musicBrainzTrackID, TagMatch(.equals, "x", negated: true)))
    }

    @Test func errorsAsMPDGivesThem() {
        #expect(failure("(Artist == )") == "Quoted string expected")
        #expect(failure("(Artist = 'x')") == "'==' or '!=' expected")
        #expect(failure("(Artist contains'x')") == "'==' or '!=' expected")
        #expect(failure("(Artist == 'x'") == "')' expected")
        #expect(failure("(Artist == 'x') garbage") == "Unparsed garbage after expression")
        #expect(failure("(Bogus == 'x')") == "Unknown filter type: Bogus")
        #expect(failure("(Bogus-name == 'x')") == "Unknown filter type: Bogus-name")
        #expect(failure("(_x == 'x')") == "Unknown filter type: _x")
        #expect(failure("(1x == 'x')") == "Word expected")
        #expect(failure("(Artist == 'x") == "Closing quote not found")
        #expect(failure("((Artist == 'x') OR (Artist == 'y'))") == "'AND' expected")
        #expect(failure("((Artist == 'x') and (Title == 'y'))") == "'AND' expected")
        #expect(failure("(((Artist == 'A') AND (Track == '2')) AND (Title == 'T'))") == "Word expected")
        #expect(failure("((Artist == 'A') AND Track == '2')") == "Unknown filter type: rack")
        #expect(failure("((Artist == 'x') AND") == "Word expected")
        #expect(failure("((Artist == 'x') AND ") == "Word expected")
        #expect(failure("(Artist == 'x' AND (Title == 'y'))") == "')' expected")
        #expect(failure("(!Artist == 'x')") == "'(' expected")
        #expect(failure("(!(Artist == 'x') garbage)") == "')' expected")
        #expect(failure("()") == "Word expected")
        #expect(failure("(") == "Word expected")
        #expect(failure("(Artist") == "'==' or '!=' expected")
        #expect(failure("(Artist ==") == "Quoted string expected")
        #expect(failure("(AudioFormat != '44100:16:2')") == "'==' or '=~' expected")
    }

    @Test func timeStampErrors() {
        #expect(failure("(modified-since 'yesterday')") == "Failed to parse date")
        #expect(failure("(modified-since '')") == "Failed to parse date")
        #expect(failure("(modified-since '2023-11-14 x')") == "Garbage at end of time stamp")
        #expect(failure("(modified-since '2023-11-14T')") == "Failed to parse time of day")
        #expect(failure("(modified-since '2023-11-14T22:')") == "Failed to parse time of day")
        #expect(failure("(modified-since '2023-11-14T22:13:20+1')") == "Failed to parse time zone offset")
        #expect(failure("(modified-since '2023-11-14T22:13:20+14')") == "Time offset hours out of range")
        #expect(failure("(modified-since '2023-11-14T22:13:20+0160')") == "Time offset minutes out of range")
    }

    @Test func timeStampForms() throws {
        // Each checked against MPD: which of the six songs (mtime 1700000000) matched.
        #expect(try MPDTimeStamp.parse("2023-11") == 1_698_796_800)
        #expect(try MPDTimeStamp.parse("2023-11-14") == 1_699_920_000)
        #expect(try MPDTimeStamp.parse("20231114") == 1_699_920_000)
        #expect(try MPDTimeStamp.parse("2023-11-14Z") == 1_699_920_000)
        #expect(try MPDTimeStamp.parse("20231114T2213") == 1_699_999_980)
        #expect(try MPDTimeStamp.parse("2023-11-14T23:13:20+01:00") == 1_700_000_000)
        #expect(try MPDTimeStamp.parse("2023-11-14T23:13:21+01") == 1_700_000_001)
        #expect(try MPDTimeStamp.parse("2023-11-14T22:13:21+0000") == 1_700_000_001)
        #expect(try MPDTimeStamp.parse("2023-11-14T17:13:20-05") == 1_700_000_000)
    }

    @Test func audioFormatErrors() {
        #expect(failure("(AudioFormat == '44100:16:9')") == "Invalid channel count: 9")
        #expect(failure("(AudioFormat == '44100:16')") == "Channel count missing")
        #expect(failure("(AudioFormat == '44100')") == "Sample format missing")
        #expect(failure("(AudioFormat == 'x')") == "Failed to parse the sample rate")
        #expect(failure("(AudioFormat == '0:16:2')") == "Invalid sample rate: 0")
        #expect(failure("(AudioFormat == '44100:17:2')") == "Invalid sample format: 17")
        #expect(failure("(AudioFormat == '44100:16:2x')") == "Extra data after channel count: x")
        #expect(failure("(AudioFormat == '*:16:2')") == "Failed to parse the sample rate")
    }
}

@Suite struct MPDFilterPairTests {
    @Test func findMatchesWholeValuesSearchSubstringsWithoutCase() throws {
        #expect(try find("Artist", "A") == .tag(.artist, TagMatch(.equals, "A")))
        #expect(try search("Artist", "a") == .tag(.artist, TagMatch(.contains, "a", foldCase: true)))
        #expect(try find("Artist", "A", "Album", "B") == .and([.tag(.artist, TagMatch(.equals, "A")), .tag(.album, TagMatch(.equals, "B"))]))
        #expect(try search("file", "LOOSE") == .file(TagMatch(.contains, "LOOSE", foldCase: true)))
        #expect(try find("filename", "x") == .file(TagMatch(.equals, "x")))
        #expect(try find("FILE", "x") == .file(TagMatch(.equals, "x")))
        #expect(try find("Any", "Jazz") == .anyTag(TagMatch(.equals, "Jazz")))
        #expect(try find("base", "loose") == .base("loose"))
        #expect(try find("modified-since", "2023-11") == .modifiedSince(1_698_796_800))
    }

    @Test func pairsAndExpressionsMix() throws {
        let a = LibraryFilter.tag(.artist, TagMatch(.equals, "A"))
        let b = LibraryFilter.tag(.album, TagMatch(.equals, "B"))
        #expect(try find("(Artist == 'A')", "Album", "B") == .and([a, b]))
        #expect(try find("Album", "B", "(Artist == 'A')") == .and([b, a]))
    }

    @Test func errors() {
        #expect(failure("Bogus", "x") == "Unknown filter type")
        #expect(failure("Artist") == "Incorrect number of filter arguments")
        #expect(failure("Artist", "x", "Album") == "Incorrect number of filter arguments")
        #expect(failure("base", "../x") == "Bad URI")
        #expect(failure("base", "/etc") == "Bad URI")
        #expect((try? MPDFilterParser.parse([], foldCase: false)) == nil)
    }
}

@Suite struct MPDFilterHostileTests {
    @Test func deepNestingIsRefusedWithoutRecursingFurther() {
        let depth = 100_000
        let deep = String(repeating: "(!", count: depth) + "(Artist == 'x')" + String(repeating: ")", count: depth)
        #expect(failure(deep) == "Filter nested too deeply")
        let deepAnd = String(repeating: "(", count: depth) + "(Artist == 'x')" + String(repeating: ")", count: depth)
        #expect(failure(deepAnd) == "Filter nested too deeply")
        let fits = String(repeating: "(!", count: MPDProtocol.maxFilterDepth - 1) + "(Artist == 'x')" + String(repeating: ")", count: MPDProtocol.maxFilterDepth - 1)
        #expect(failure(fits) == nil)
    }

    @Test func quotedValuesAreBoundedAsMPDs() {
        let fits = String(repeating: "v", count: 4095)
        let tooLong = String(repeating: "v", count: 4096)
        #expect(failure("(Artist == '\(fits)')") == nil)
        #expect(failure("(Artist == '\(tooLong)')") == "Quoted value is too long")
        #expect(failure("(Artist == '" + String(repeating: "v", count: 1 << 20)) == "Quoted value is too long")
    }

    @Test func garbageNeverTraps() {
        let samples = ["(", ")", "((", "(!", "(!(", "(Artist", "(Artist ==", "(Artist == '", "(Artist == '\\",
                       "(AudioFormat", "(AudioFormat ==", "(AudioFormat == 'dsd", "(AudioFormat == 'dsd64:",
                       "(AudioFormat =~ '44100:", "(AudioFormat =~ '44100:*", "(modified-since", "(modified-since '2023-",
                       "(modified-since '2023-11-14T22:13:20+", "(base", "((Artist == 'x') AND (",
                       "(\u{0}Artist == 'x')", "(Artist \u{1} == 'x')", "(Ünïcödé == 'x')", "(Artist == 'Ünï\\cödé')"]
        for sample in samples {
            _ = failure(sample)
        }
        // Every prefix of a valid expression.
        let valid = Array("((Artist == 'A') AND (!(Title contains \"x\\\"y\")) AND (AudioFormat =~ '*:24:*') AND (modified-since '2023-11-14T22:13:20+01:00'))")
        for n in 0...valid.count { _ = failure(String(valid[0..<n])) }
        #expect(failure(String(valid)) == nil)
    }
}

@Suite struct MPDSafeURITests {
    /// MPD's uri_safe_local, segment by segment, as the rule reads.
    private func bySegments(_ uri: String) -> Bool {
        if uri.isEmpty { return true }
        if uri.hasPrefix("/") { return false }
        return !uri.split(separator: "/", omittingEmptySubsequences: false)
            .contains { $0.isEmpty || $0 == "." || $0 == ".." }
    }

    @Test func byteCheckIsTheSegmentRule() {
        #expect(MPDFilterParser.isSafeLocalURI(""))
        #expect(MPDFilterParser.isSafeLocalURI("a/b.flac"))
        #expect(MPDFilterParser.isSafeLocalURI("...") && MPDFilterParser.isSafeLocalURI("a/.x/..y/b.."))
        #expect(!MPDFilterParser.isSafeLocalURI("a/../b") && !MPDFilterParser.isSafeLocalURI("/a")
                && !MPDFilterParser.isSafeLocalURI("a/") && !MPDFilterParser.isSafeLocalURI("a//b")
                && !MPDFilterParser.isSafeLocalURI(".") && !MPDFilterParser.isSafeLocalURI("a/."))
        // Every string of up to 5 pieces.
        let pieces = ["a", ".", "/", "é", ".."]
        var strings = [""]
        for _ in 0..<5 { strings = strings.flatMap { s in pieces.map { s + $0 } } + strings }
        var checked = Set<String>()
        for uri in strings where checked.insert(uri).inserted {
            #expect(MPDFilterParser.isSafeLocalURI(uri) == bySegments(uri), "\(uri)")
        }
        #expect(checked.count > 1000)
    }
}
