// serve's config file: `option = value` lines naming serve's long options,
// given to the argument parser before the command line, so every option is
// read and checked by the one parser — specs/application.md §Config file
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// A config file that cannot be used: printed as `harmonia-play: MESSAGE`,
/// exit 2 (a usage error). The message names `FILE:LINE` when one line is at fault.
struct ServeConfigError: Error, Equatable {
    let message: String
}

/// One setting of a config file: `name = value`, or a bare `name` (value nil).
struct ServeConfigEntry: Equatable {
    let line: Int
    let name: String
    let value: String?
}

/// serve's long options as its parser declares them (`ServeCommand._dumpHelp()`):
/// the names a config file may use, which are flags, and which hold secrets.
struct ServeOptionTable {
    enum Kind { case flag, option }
    struct Option {
        let kind: Kind
        /// Its value is a password or a token (value name SECRET or TOKEN).
        let isSecret: Bool
    }
    let options: [String: Option]

    /// Options that are not settings of a server: the file names itself, help and the like.
    static let notSettings: Set<String> = ["config", "help", "version", "experimental-dump-help", "generate-completion-script"]

    /// serve's table, from the parser.
    static let serve = ServeOptionTable(dumpHelp: ServeCommand._dumpHelp())

    /// The table of the argument parser's JSON description of a command (its `--experimental-dump-help`).
    init(dumpHelp: String) {
        var options: [String: Option] = [:]
        let root = (try? JSONSerialization.jsonObject(with: Data(dumpHelp.utf8))) as? [String: Any]
        let command = root?["command"] as? [String: Any]
        for argument in command?["arguments"] as? [[String: Any]] ?? [] {
            let kind: Kind
            switch argument["kind"] as? String {
            case "flag": kind = .flag
            case "option": kind = .option
            default: continue
            }
            let valueName = argument["valueName"] as? String
            for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                guard let long = name["name"] as? String, !Self.notSettings.contains(long) else { continue }
                options[long] = Option(kind: kind, isSecret: valueName == "SECRET" || valueName == "TOKEN")
            }
        }
        self.options = options
    }

    /// The setting an option name sets: `password-file` and `password` are one.
    func setting(_ name: String) -> String {
        if name.hasSuffix("-file"), options[String(name.dropLast(5))] != nil { return String(name.dropLast(5)) }
        return name
    }
}

/// Reads serve's config file and puts its settings before the command line.
enum ServeConfigFile {
    /// Files past this are refused (a config file is a few kilobytes).
    static let maximumBytes = 1 << 20

    /// `$XDG_CONFIG_HOME/harmonia-play/harmonia-play.conf` (else `~/.config/…`).
    static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config + "/harmonia-play/harmonia-play.conf" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/harmonia-play/harmonia-play.conf"
    }

    /// The command `arguments` (the program's, without its name) name,
    /// parsed; for `serve`, with its config file's settings first: `--config
    /// FILE`, else the default file when it exists. The command line
    /// overrides the file (a setting it names is not taken from the file).
    /// - Throws: `ServeConfigError` for a file that cannot be read or a
    ///   line that is not a setting serve takes; the parser's errors for the command line.
    static func parseAsRoot(_ arguments: [String],
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ParsableCommand {
        guard arguments.first == "serve" else { return try HarmoniaPlay.parseAsRoot(arguments) }
        let commandLine = Array(arguments.dropFirst())
        let options = Array(commandLine.prefix { $0 != "--" })
        // Help, the version and the parser's own outputs read no file.
        if options.contains(where: { ["-h", "--help", "--version", "--experimental-dump-help"].contains($0)
                                     || $0.hasPrefix("--generate-completion-script") }) {
            return try HarmoniaPlay.parseAsRoot(arguments)
        }
        let path: String
        switch configOption(options) {
        case .some(.some(let given)): path = given
        case .some(.none): return try HarmoniaPlay.parseAsRoot(arguments)  // --config without a value: the parser says so
        case .none:
            path = defaultPath(environment: environment)
            guard FileManager.default.fileExists(atPath: path) else { return try HarmoniaPlay.parseAsRoot(arguments) }
        }
        let table = ServeOptionTable.serve
        let entries = try entries(text: try read(path), path: path)
        var settings = try self.arguments(entries, table: table, path: path)
        warnAboutSecrets(entries, table: table, path: path)  // held in the file, used or not
        let named = Set(options.compactMap { optionName($0) }.map(table.setting))
        settings.removeAll { named.contains(table.setting($0.entry.name)) }
        return try parse(settings, commandLine: commandLine, path: path)
    }

    /// The settings of `text`, the lines of a config file at `path`: `name =
    /// value` or a bare `name`; blank lines and lines starting with `#` are
    /// skipped; a value in double or single quotes loses them.
    static func entries(text: [UInt8], path: String) throws(ServeConfigError) -> [ServeConfigEntry] {
        var entries: [ServeConfigEntry] = []
        for (index, bytes) in text.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            guard let decoded = String(validating: bytes, as: UTF8.self) else {
                throw ServeConfigError(message: "\(path):\(number): not UTF-8 text")
            }
            var line = Substring(decoded)
            if line.hasSuffix("\r") { line = line.dropLast() }
            line = line.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                throw ServeConfigError(message: "\(path):\(number): a control character")
            }
            let name: Substring, value: String?
            if let equals = line.firstIndex(of: "=") {
                name = line[..<equals].trimmingSpaces
                var text = line[line.index(after: equals)...].trimmingSpaces
                if text.count >= 2, let first = text.first, first == "\"" || first == "'", text.last == first {
                    text = text.dropFirst().dropLast()
                }
                value = String(text)
            } else {
                name = line
                value = nil
            }
            guard !name.isEmpty, name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }),
                  !name.hasPrefix("-") else {
                throw ServeConfigError(message: "\(path):\(number): '\(name.prefix(60))' is not an option name (lower-case letters, digits and '-', without the leading '--')")
            }
            entries.append(ServeConfigEntry(line: number, name: String(name), value: value))
        }
        return entries
    }

    /// A config line as the parser reads it: `--name=value`, `--name` for a
    /// flag that is on, nothing for one that is off.
    struct Setting {
        let entry: ServeConfigEntry
        let arguments: [String]
    }

    /// `entries` as arguments, each checked against `table`: a known name, a
    /// value for an option, yes or no (or nothing) for a flag.
    static func arguments(_ entries: [ServeConfigEntry], table: ServeOptionTable, path: String) throws(ServeConfigError) -> [Setting] {
        try entries.map { (entry) throws(ServeConfigError) -> Setting in
            let at = "\(path):\(entry.line)"
            if entry.name == "config" { throw ServeConfigError(message: "\(at): 'config' names the file itself; it cannot be set in one") }
            guard let option = table.options[entry.name] else {
                throw ServeConfigError(message: "\(at): unknown option '\(entry.name)' (serve's options: harmonia-play serve --help)")
            }
            switch (option.kind, entry.value?.lowercased()) {
            case (.flag, nil), (.flag, "yes"), (.flag, "true"), (.flag, "on"):
                return Setting(entry: entry, arguments: ["--" + entry.name])
            case (.flag, "no"), (.flag, "false"), (.flag, "off"):
                return Setting(entry: entry, arguments: [])
            case (.flag, _):
                throw ServeConfigError(message: "\(at): '\(entry.name)' is a flag: '\(entry.name) = yes', '\(entry.name) = no' or '\(entry.name)'")
            case (.option, nil):
                throw ServeConfigError(message: "\(at): '\(entry.name)' needs a value: '\(entry.name) = VALUE'")
            case (.option, _):
                // One argument: a value starting with '-' stays a value.
                return Setting(entry: entry, arguments: ["--\(entry.name)=\(entry.value ?? "")"])
            }
        }
    }

    /// Parses the file's settings, then the command line. On an error, the
    /// command line alone is tried (its own errors are said as such); else the
    /// line at fault is the last whose removal makes the rest parse, or the
    /// first that fails alone beside the command line.
    static func parse(_ settings: [Setting], commandLine: [String], path: String) throws -> ParsableCommand {
        func parsed(_ settings: [Setting]) throws -> ParsableCommand {
            try HarmoniaPlay.parseAsRoot(["serve"] + settings.flatMap(\.arguments) + commandLine)
        }
        do {
            return try parsed(settings)
        } catch {
            guard HarmoniaPlay.exitCode(for: error) == .validationFailure else { throw error }
            _ = try parsed([])  // the command line's own error
            let message = Console.oneLine(HarmoniaPlay.message(for: error))
            for index in settings.indices.reversed() where (try? parsed(settings.enumerated().filter { $0.offset != index }.map(\.element))) != nil {
                throw ServeConfigError(message: "\(path):\(settings[index].entry.line): \(message)")
            }
            for setting in settings {
                do {
                    _ = try parsed([setting])
                } catch {
                    throw ServeConfigError(message: "\(path):\(setting.entry.line): \(Console.oneLine(HarmoniaPlay.message(for: error)))")
                }
            }
            throw ServeConfigError(message: "\(path): \(message)")
        }
    }

    /// Says on stderr when the file holds a secret (a password, a token)
    /// and every user may read it.
    static func warnAboutSecrets(_ entries: [ServeConfigEntry], table: ServeOptionTable, path: String) {
        guard let secret = entries.first(where: { table.options[$0.name]?.isSecret == true }) else { return }
        SecretFile.warnIfReadableByOthers(path, holding: "'\(secret.name)' (line \(secret.line))")
    }

    /// The file's bytes, at most `maximumBytes`; a regular file only (not a FIFO, a device).
    static func read(_ path: String) throws(ServeConfigError) -> [UInt8] {
        do throws(CoreError) {
            return try SecretFile.bytes(path, limit: maximumBytes)
        } catch {
            throw ServeConfigError(message: "config file: \(error.message)")
        }
    }

    /// `--config`'s value on the command line: nil when not given, `.some(nil)` when given without one.
    static func configOption(_ options: [String]) -> String?? {
        var found: String?? = nil
        var index = options.startIndex
        while index < options.endIndex {
            let argument = options[index]
            if argument == "--config" {
                found = .some(index + 1 < options.endIndex ? options[index + 1] : nil)
                index += 1
            } else if argument.hasPrefix("--config=") {
                found = .some(String(argument.dropFirst("--config=".count)))
            }
            index += 1
        }
        return found
    }

    /// `--name` or `--name=value` → name; nil for anything else.
    static func optionName(_ argument: String) -> String? {
        guard argument.hasPrefix("--"), argument.count > 2 else { return nil }
        return String(argument.dropFirst(2).prefix { $0 != "=" })
    }
}

/// Files that hold a secret (`--password-file`, a config file with a password).
enum SecretFile {
    /// The first line of `path` (at most 4 KiB), without surrounding white space.
    /// - Throws: `notFound`, `ioError`, or `invalidArgument` for an empty first line.
    static func firstLine(_ path: String) throws(CoreError) -> String {
        let bytes = try bytes(path, limit: 4096)
        let line = String(decoding: bytes.prefix { $0 != 0x0A }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !line.isEmpty else { throw .invalidArgument("\(path): the first line is empty") }
        return line
    }

    /// The bytes of the regular file `path`, at most `limit` of them.
    /// - Throws: `notFound`, or `ioError` for a file that cannot be read, is
    ///   not a regular file, or is longer than `limit`.
    static func bytes(_ path: String, limit: Int) throws(CoreError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw .notFound("\(path): no such file") }
            throw .ioError("\(path): cannot be read (\(String(cString: strerror(code))))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw .ioError("\(path): not a regular file") }
        guard info.st_size <= limit else { throw .ioError("\(path): longer than \(limit) bytes") }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count <= limit {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, limit + 1 - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw .ioError("\(path): cannot be read (\(String(cString: strerror(errno))))") }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else { throw .ioError("\(path): longer than \(limit) bytes") }
        return Array(bytes.prefix(count))
    }

    /// Says on stderr, once, when every user may read `path` (which holds `what`).
    static func warnIfReadableByOthers(_ path: String, holding what: String) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IROTH != 0 else { return }
        Console.err("harmonia-play: warning: \(path) holds \(what) and every user can read it; chmod o-r \(path)")
    }
}

private extension Substring {
    /// Without the spaces and tabs at either end.
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return self[first...last]
    }
}
