// ICY metadata (SHOUTcast/Icecast): with `Icy-MetaData: 1` the server puts a
// metadata block after every `icy-metaint` bytes of audio: one length byte
// (× 16), then `StreamTitle='…';StreamUrl='…';` padded with NULs. The
// de-interleaver removes the blocks so the decoder sees only audio.

/// Splits an ICY body into audio bytes and metadata blocks.
///
/// Not thread-safe: one per response, on the transfer's thread.
struct ICYDeinterleaver {
    /// Audio bytes between two metadata blocks (`icy-metaint`).
    let interval: Int
    private var audioLeft: Int
    private var metadataLeft = 0
    private var awaitingLength = false
    private var block: [UInt8] = []

    init(interval: Int) {
        self.interval = interval
        audioLeft = interval
    }

    /// Feeds `bytes`; `audio` receives the audio runs in order, `metadata`
    /// each complete block's text.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, audio: (UnsafeRawBufferPointer) -> Bool,
                       metadata: (String) -> Void) -> Bool {
        var index = 0
        while index < bytes.count {
            if awaitingLength {
                metadataLeft = Int(bytes[index]) * 16
                index += 1
                awaitingLength = false
                block.removeAll(keepingCapacity: true)
                if metadataLeft == 0 { audioLeft = interval }
                continue
            }
            if metadataLeft > 0 {
                let take = min(metadataLeft, bytes.count - index)
                block.append(contentsOf: bytes[index..<index + take])
                metadataLeft -= take
                index += take
                if metadataLeft == 0 {
                    metadata(String(decoding: block.prefix { $0 != 0 }, as: UTF8.self))
                    audioLeft = interval
                }
                continue
            }
            let take = min(audioLeft, bytes.count - index)
            if !audio(UnsafeRawBufferPointer(rebasing: bytes[index..<index + take])) { return false }
            audioLeft -= take
            index += take
            if audioLeft == 0 { awaitingLength = true }
        }
        return true
    }

    /// The `StreamTitle` of a metadata block, nil when it has none.
    static func streamTitle(in text: String) -> String? {
        guard let start = text.range(of: "StreamTitle='") else { return nil }
        let rest = text[start.upperBound...]
        // The title ends at the quote that closes the field: `';` (a title may contain quotes).
        let end = rest.range(of: "';")?.lowerBound ?? rest.lastIndex(of: "'") ?? rest.endIndex
        return String(rest[..<end])
    }
}
