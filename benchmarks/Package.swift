// swift-tools-version: 6.1
//
// Benchmarks for HarmoniaCore (issue 6): a package of its own so that the
// main build and `make test` stay light. Run the scripts in this folder
// (`make bench` runs them all); see RESULTS.md for what they measure.
import PackageDescription

let package = Package(
    name: "HarmoniaBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "HarmoniaCore", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // The mutex-guarded ring we compare SPSCRingBuffer with, and the
        // two-thread pump both ring measurements share.
        .target(
            name: "BenchSupport",
            dependencies: [.product(name: "HarmoniaCore", package: "HarmoniaCore")]
        ),
        // decode-bench FILE…: the DecoderPort loop to the end of each file.
        .executableTarget(
            name: "decode-bench",
            dependencies: [
                "BenchSupport",
                .product(name: "HarmoniaCore", package: "HarmoniaCore"),
                .product(name: "HarmoniaFFmpeg", package: "HarmoniaCore"),
            ]
        ),
        // ring-bench: SPSCRingBuffer vs the mutex ring, alternating, in one process.
        .executableTarget(
            name: "ring-bench",
            dependencies: ["BenchSupport", .product(name: "HarmoniaCore", package: "HarmoniaCore")]
        ),
        // ordo-one/benchmark: allocations per write/read (its malloc counter)
        // and throughput of both rings.
        .executableTarget(
            name: "RingBuffer",
            dependencies: [
                "BenchSupport",
                .product(name: "HarmoniaCore", package: "HarmoniaCore"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/RingBuffer",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
