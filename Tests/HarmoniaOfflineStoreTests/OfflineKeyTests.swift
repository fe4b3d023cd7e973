// The key rules — specs/offline.md §Keys
import HarmoniaCore
import HarmoniaOfflineStore
import Testing

@Suite("Offline keys") struct OfflineKeyTests {
    @Test("the default key is the URL exactly as given")
    func defaultKey() throws {
        let url = "https://h.example/a%20b.flac?b=2&a=1#frag"
        #expect(try OfflineKey.make(url: url) == url)
        #expect(try OfflineKey.make(url: url, dropping: ["zzz"]) == url)
    }

    @Test("--cache-key-drop leaves matching parameters out, the rest in order; * is a wildcard; names case-insensitive")
    func dropping() throws {
        let signed = "https://s3.example/t.flac?z=9&X-Amz-Signature=abc&a=1&X-Amz-Expires=60&x-amz-date=2026#f"
        #expect(try OfflineKey.make(url: signed, dropping: ["X-Amz-*"]) == "https://s3.example/t.flac?z=9&a=1#f")
        let subsonic = "http://h/rest/stream?u=me&t=26719a1196d2a940705a59634eb18eab&s=c19b2d&id=42&v=1.16.1&c=app"
        #expect(try OfflineKey.make(url: subsonic, dropping: ["t", "s"]) == "http://h/rest/stream?u=me&id=42&v=1.16.1&c=app")
        #expect(try OfflineKey.make(url: "http://h/x?Expires=1&Signature=2", dropping: ["Expires", "Signature"]) == "http://h/x")
        #expect(try OfflineKey.make(url: "http://h/x?flag&Sig=1", dropping: ["sig"]) == "http://h/x?flag")
        // Two signings of one track: one key.
        let one = try OfflineKey.make(url: "http://h/x.flac?id=7&Expires=100&Signature=aa", dropping: ["Expires", "Sig*"])
        let two = try OfflineKey.make(url: "http://h/x.flac?id=7&Expires=200&Signature=bb", dropping: ["Expires", "Sig*"])
        #expect(one == two && one == "http://h/x.flac?id=7")
    }

    @Test("wildcards: anchored at both ends, any run in the middle")
    func wildcard() {
        #expect(OfflineKey.matches("X-Amz-Signature", pattern: "x-amz-*"))
        #expect(OfflineKey.matches("abc", pattern: "*"))
        #expect(OfflineKey.matches("", pattern: "*"))
        #expect(OfflineKey.matches("token", pattern: "t*k*n"))
        #expect(!OfflineKey.matches("token", pattern: "t*x*n"))
        #expect(!OfflineKey.matches("ab", pattern: "ab*ab"))
        #expect(OfflineKey.matches("abab", pattern: "ab*ab"))
        #expect(!OfflineKey.matches("signature", pattern: "sig"))
    }

    @Test("an explicit key names the entry outright; an empty one is refused")
    func explicit() throws {
        #expect(try OfflineKey.make(url: "http://h/x?Sig=1", explicit: "album/track1", dropping: ["Sig"]) == "album/track1")
        #expect(throws: CoreError.self) { try OfflineKey.make(url: "http://h/x", explicit: "") }
        let policy = OfflineKeyPolicy(dropping: ["Sig"])
        #expect(policy.key(for: "http://h/x?Sig=1&a=2") == "http://h/x?a=2")
        try policy.name(url: "http://h/x?Sig=1&a=2", key: "mine")
        #expect(policy.key(for: "http://h/x?Sig=1&a=2") == "mine")
    }
}
