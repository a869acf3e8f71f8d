// swift-tools-version:6.0
import PackageDescription

// Layout (see docs/architecture.md "Modules"):
// - C* targets: system libraries from Debian packages, only a module map and shim.h each.
// - GeotriggerCore: the pure core (JSON/JSON5 reader, fence layers, geometry, index, Arcade,
//   triggers and monitors). No C imports and no I/O; time is injected.
// - MQTT, GPSD, Store: one thin wrapper per C library; the only modules importing C*.
// - ReadInterposition: the process-wide `read`/`close` for MQTT's buffered reads.
// - Gateway: wires feeds -> monitors -> delivery and implements every command but `bench`.
// - Benchmarks: `geotrigger bench` (the benchmark programs and their load generator).
// - geotrigger: the thin @main.
let package = Package(
    name: "geotrigger",
    products: [
        .executable(name: "geotrigger", targets: ["geotrigger"])
    ],
    targets: [
        .systemLibrary(
            name: "CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        .systemLibrary(
            name: "CGPS",  // no pkgConfig: its `--libs` is -lgps; libgps is dlopen'ed (CGPS/shim.h)
            providers: [.apt(["libgps-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .target(name: "GeotriggerCore"),
        .target(name: "MQTT", dependencies: ["CMosquitto"]),
        // The process's `read` and `close` (for MQTT's BufferedReads): a change to the whole
        // process, linked only by the executable and the MQTT tests, which export both symbols
        // so that libmosquitto binds to them.
        .target(
            name: "ReadInterposition", dependencies: ["MQTT"],
            linkerSettings: [
                .unsafeFlags(["-Xlinker", "--export-dynamic-symbol=read", "-Xlinker", "--export-dynamic-symbol=close"])
            ]),
        .target(name: "GPSD", dependencies: ["CGPS"]),
        .target(name: "Store", dependencies: ["CSQLite"]),
        .target(
            name: "Gateway",
            dependencies: ["GeotriggerCore", "MQTT", "GPSD", "Store"]),
        .target(name: "Benchmarks", dependencies: ["Gateway", "GeotriggerCore", "MQTT", "Store"]),
        .executableTarget(name: "geotrigger", dependencies: ["Gateway", "Benchmarks", "ReadInterposition"]),
        // Fixtures live in Tests/Fixtures and are found through #filePath (no resource bundles).
        // Test plumbing (real brokers, certificates, polling); never a product dependency.
        .target(name: "TestSupport", dependencies: ["MQTT"], path: "Tests/TestSupport"),
        .testTarget(name: "CoreTests", dependencies: ["GeotriggerCore"]),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "ReadInterposition", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "TestSupport"]),
        // Run by StoreTests as a separate process (kill -9) and for store measurements.
        .executableTarget(name: "StoreHelper", dependencies: ["Store"], path: "Tests/StoreHelper"),
        .testTarget(name: "GPSDTests", dependencies: ["GPSD", "TestSupport"]),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "Benchmarks", "GeotriggerCore", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
