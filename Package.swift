// swift-tools-version:6.0
//
// HarmoniaCore for Linux. The target graph draws the hexagon: HarmoniaCore
// (models, ports, services, real-time ring) imports no C library; each
// adapter module imports exactly one, through a system-library target in
// CShims/.
import Foundation
import PackageDescription

/// The web remote (HarmoniaWebSocket: swift-nio, NIOWebSocket, swift-nio-ssl)
/// and the UPnP renderer (HarmoniaUPnP: swift-nio) are left out when
/// HARMONIA_WITHOUT_WEB is set. The sanitizer builds of
/// `make test` set it: swift-nio-ssl compiles BoringSSL, about 150 s per
/// build on two cores, and those builds run no web test. harmonia-play
/// built so refuses `--listen ADDR` and `--upnp` with a one-line error.
let withWeb = ProcessInfo.processInfo.environment["HARMONIA_WITHOUT_WEB"] == nil

let package = Package(
    name: "HarmoniaCore",
    products: [
        .library(name: "HarmoniaCore", targets: ["HarmoniaCore"]),
        .library(name: "HarmoniaFFmpeg", targets: ["HarmoniaFFmpeg"]),
        .library(name: "HarmoniaPulseAudio", targets: ["HarmoniaPulseAudio"]),
        .library(name: "HarmoniaHTTP", targets: ["HarmoniaHTTP"]),
        .library(name: "HarmoniaLinux", targets: ["HarmoniaLinux"]),
        .library(name: "HarmoniaMPRIS", targets: ["HarmoniaMPRIS"]),
        .library(name: "HarmoniaControl", targets: ["HarmoniaControl"]),
        .library(name: "HarmoniaLibrary", targets: ["HarmoniaLibrary"]),
        .library(name: "HarmoniaSQLite", targets: ["HarmoniaSQLite"]),
        .library(name: "HarmoniaOfflineStore", targets: ["HarmoniaOfflineStore"]),
        .library(name: "HarmoniaListens", targets: ["HarmoniaListens"]),
        .library(name: "HarmoniaMPD", targets: ["HarmoniaMPD"]),
        .library(name: "HarmoniaSnapcast", targets: ["HarmoniaSnapcast"]),
        .library(name: "HarmoniaSlimproto", targets: ["HarmoniaSlimproto"]),
    ] + (withWeb ? [.library(name: "HarmoniaWebSocket", targets: ["HarmoniaWebSocket"]),
                    .library(name: "HarmoniaUPnP", targets: ["HarmoniaUPnP"])] : []) + [
        .executable(name: "harmonia-play", targets: ["harmonia-play"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // `make docs`: the DocC catalogs of HarmoniaCore and HarmoniaLinux.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ] + (withWeb ? [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ] : []),
    targets: [
        // MARK: C libraries (no logic: see each shim.h)
        .systemLibrary(
            name: "CFFmpeg",
            path: "CShims/CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswresample-dev", "libavutil-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            path: "CShims/CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // No pkgConfig: libpulse's cflags (-D_REENTRANT -pthread) are flags
        // SwiftPM prohibits, and it warns about them in every dependent
        // package's build. The headers are in /usr/include; the module map links.
        .systemLibrary(
            name: "CPulseAudio",
            path: "CShims/CPulseAudio",
            providers: [.apt(["libpulse-dev"])]
        ),
        // libFuzzer's driver entry point, declared only: linked by the fuzz build (Tests/Fuzz/fuzz.sh).
        .systemLibrary(
            name: "CLibFuzzer",
            path: "CShims/CLibFuzzer"
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "CShims/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // SHA-256 only (the offline store): libcurl's OpenSSL build links it already.
        .systemLibrary(
            name: "CCrypto",
            path: "CShims/CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CDBus",
            path: "CShims/CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),

        // MARK: The core: platform-neutral
        .target(
            name: "HarmoniaCore",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),

        // MARK: Adapters
        .target(
            name: "HarmoniaFFmpeg",
            dependencies: ["HarmoniaCore", "CFFmpeg"]
        ),
        .target(
            name: "HarmoniaPulseAudio",
            dependencies: ["HarmoniaCore", "CPulseAudio"]
        ),
        // An output to every room of a Snapcast server: its own module because
        // it brings its own C (libswresample through CFFmpeg, for resampling
        // only), its own network protocol and its own test world (a real
        // snapserver); HarmoniaCore stays C-free and the decoder socket-free.
        .target(
            name: "HarmoniaSnapcast",
            dependencies: ["HarmoniaCore", "CFFmpeg"]
        ),
        // A driving adapter: it calls the playback service on behalf of the
        // desktop (MPRIS 2 on the D-Bus session bus); the core does not know it.
        .target(
            name: "HarmoniaMPRIS",
            dependencies: ["HarmoniaCore", "CDBus"]
        ),
        .target(
            name: "HarmoniaHTTP",
            dependencies: ["HarmoniaCore", "CCurl", "CCrypto"]
        ),

        // The music library: scanner, store port, queries. Platform-neutral
        // (no C): the store is a port, SQLite its adapter.
        .target(
            name: "HarmoniaLibrary",
            dependencies: ["HarmoniaCore"]
        ),
        .target(
            name: "HarmoniaSQLite",
            dependencies: ["HarmoniaCore", "HarmoniaLibrary", "CSQLite"]
        ),
        // Offline copies (specs/offline.md): a folder of files indexed by
        // SQLite, on the package's one SQLite layer (HarmoniaSQLite's
        // package-access calls); downloads through HarmoniaHTTP's libcurl;
        // SHA-256 from libcrypto. It implements the application layer's OfflineCopiesPort (HarmoniaControl).
        .target(
            name: "HarmoniaOfflineStore",
            dependencies: ["HarmoniaCore", "HarmoniaSQLite", "HarmoniaHTTP", "HarmoniaControl", "CCrypto"]
        ),
        // The application layer: the player's main loop, its commands and
        // event fan-out, and the JSON-lines transports; every way of driving
        // the player is a frontend of it.
        .target(
            name: "HarmoniaControl",
            dependencies: ["HarmoniaCore", "HarmoniaLibrary"]
        ),
        // Listens (specs/listens.md): the play history on the package's one
        // SQLite layer and ListenBrainz over HarmoniaHTTP's libcurl; the rule,
        // the ports and the outbox are the application layer's.
        .target(
            name: "HarmoniaListens",
            dependencies: ["HarmoniaCore", "HarmoniaControl", "HarmoniaSQLite", "HarmoniaHTTP"]
        ),
        // A driving adapter: MPD's protocol over TCP, on the library.
        .target(
            name: "HarmoniaMPD",
            dependencies: ["HarmoniaCore", "HarmoniaLibrary", "HarmoniaControl"]
        ),

        // A driving adapter: a Squeezebox player (slimproto over TCP) that
        // Lyrion Music Server and Music Assistant drive; plain sockets, no C.
        .target(
            name: "HarmoniaSlimproto",
            dependencies: ["HarmoniaCore", "HarmoniaControl"]
        ),

        // MARK: Composition: the default adapters wired in one call
        .target(
            name: "HarmoniaLinux",
            dependencies: ["HarmoniaCore", "HarmoniaFFmpeg", "HarmoniaPulseAudio", "HarmoniaHTTP", "HarmoniaSnapcast"]
        ),

        // MARK: Parts of the program (not adapters: the Snapcast control
        // bridge speaks to snapserver and to our own control socket; the
        // vector runner drives the service through specs/vectors)
        .target(
            name: "HarmoniaSnapcastControl",
            dependencies: ["HarmoniaControl"]
        ),
        .target(
            name: "HarmoniaVectors",
            dependencies: ["HarmoniaCore", "HarmoniaControl", "HarmoniaFFmpeg"]
        ),

        // MARK: Programs
        .executableTarget(
            name: "harmonia-play",
            dependencies: [
                "HarmoniaCore",
                "HarmoniaControl",
                "HarmoniaFFmpeg",
                "HarmoniaLibrary",
                "HarmoniaSQLite",
                "HarmoniaOfflineStore",
                "HarmoniaListens",
                "HarmoniaMPD",
                "HarmoniaSlimproto",
                "HarmoniaLinux",
                "HarmoniaMPRIS",
                "HarmoniaPulseAudio",
                "CLibFuzzer",
                "HarmoniaHTTP",
                "HarmoniaSnapcast",
                "HarmoniaSnapcastControl",
                "HarmoniaVectors",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ] + (withWeb ? ["HarmoniaWebSocket", "HarmoniaUPnP"] : [])
        ),

        // A process that exits while another thread is in libcrypto (the
        // cache tests run it): exit-time cleanup must not pull the library
        // from under that thread.
        .executableTarget(
            name: "harmonia-exit-probe",
            dependencies: ["HarmoniaOfflineStore"],
            path: "Tests/ExitProbe"
        ),

        // MARK: Test support and tests (mirroring the source targets)
        .target(
            name: "CMallocCounter",
            path: "Tests/CMallocCounter"
        ),
        .target(
            name: "HarmoniaTestSupport",
            dependencies: ["HarmoniaCore", "CMallocCounter"],
            path: "Tests/HarmoniaTestSupport"
        ),
        .testTarget(
            name: "HarmoniaCoreTests",
            dependencies: ["HarmoniaCore", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaFFmpegTests",
            dependencies: ["HarmoniaCore", "HarmoniaFFmpeg", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaPulseAudioTests",
            dependencies: ["HarmoniaCore", "HarmoniaPulseAudio", "HarmoniaFFmpeg", "HarmoniaLinux", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaMPRISTests",
            dependencies: ["HarmoniaCore", "HarmoniaMPRIS", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaHTTPTests",
            dependencies: ["HarmoniaCore", "HarmoniaHTTP", "HarmoniaFFmpeg", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaControlTests",
            dependencies: ["HarmoniaCore", "HarmoniaControl", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaLibraryTests",
            dependencies: ["HarmoniaCore", "HarmoniaLibrary", "HarmoniaSQLite", "HarmoniaFFmpeg", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaOfflineStoreTests",
            dependencies: ["HarmoniaCore", "HarmoniaOfflineStore", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaListensTests",
            dependencies: ["HarmoniaCore", "HarmoniaControl", "HarmoniaListens", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaMPDTests",
            dependencies: ["HarmoniaCore", "HarmoniaLibrary", "HarmoniaMPD", "HarmoniaControl", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaSlimprotoTests",
            dependencies: ["HarmoniaCore", "HarmoniaSlimproto", "HarmoniaControl", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaSnapcastTests",
            dependencies: ["HarmoniaCore", "HarmoniaSnapcast", "HarmoniaTestSupport"]
        ),
        .testTarget(
            name: "HarmoniaPlayTests",
            dependencies: ["harmonia-play", "HarmoniaControl", "HarmoniaLibrary", "HarmoniaSnapcastControl", "HarmoniaTestSupport"]
        ),
    ] + (withWeb ? webTargets : []),
    swiftLanguageModes: [.v6]
)

/// A driving adapter: the control protocol over WebSocket, and the web
/// remote's page (plain HTML, CSS and JavaScript in Web/, compiled into the
/// binary) on the same port; TLS through swift-nio-ssl.
var webTargets: [Target] {
    /// What an HTTP server on swift-nio needs (the web remote, the UPnP renderer).
    let nioHTTPServer: [Target.Dependency] = [
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
    ]
    return [
        .target(
            name: "HarmoniaWebSocket",
            dependencies: ["HarmoniaCore", "HarmoniaControl"] + nioHTTPServer + [
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            resources: [.embedInCode("Web")]
        ),
        .testTarget(
            name: "HarmoniaWebSocketTests",
            dependencies: ["HarmoniaWebSocket", "HarmoniaControl", "HarmoniaCore", "HarmoniaTestSupport"]
        ),
        // A driving adapter: a UPnP/DLNA MediaRenderer (SOAP, GENA, SSDP)
        // over the application layer, on swift-nio (so left out with the web).
        .target(
            name: "HarmoniaUPnP",
            dependencies: ["HarmoniaCore", "HarmoniaControl"] + nioHTTPServer
        ),
        .testTarget(
            name: "HarmoniaUPnPTests",
            dependencies: ["HarmoniaUPnP", "HarmoniaControl", "HarmoniaCore", "HarmoniaTestSupport"]
        ),
    ]
}
