import Dispatch
import Foundation
@testable import GPSD
import Synchronization
import Testing
import TestSupport

/// libgps is loaded with dlopen by the first gpsd connection, not linked (~1 MB of
/// libgps's dependencies in every gateway process otherwise).
@Suite(.serialized) struct LibraryLoadingTests {
    /// Whether a file whose name contains "libgps.so" is mapped into this process.
    static func libgpsIsMapped() throws -> Bool {
        // Read to the end: /proc files report size 0, which size-based readers take at its word.
        let file = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
        defer { try? file.close() }
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        try #require(maps.contains("libc.so.6"), "/proc/self/maps unreadable: \(maps.prefix(200))")
        return maps.split(separator: "\n").contains { $0.contains("/libgps.so") }
    }

    /// The link itself: the test executable is linked the way the product is (CGPS's module map
    /// and Package.swift entry), so a `link "gps"` or a pkgConfig coming back puts libgps in its
    /// DT_NEEDED. Order-independent, unlike the /proc/self/maps check below.
    @Test func testExecutableDoesNotNeedLibgps() throws {
        let needed = try ELFDynamicSection(path: "/proc/self/exe").needed
        // Control: the reader sees the other system libraries, linked the same way.
        #expect(needed.contains("libmosquitto.so.1"), "DT_NEEDED of the test executable: \(needed)")
        #expect(!needed.contains { $0.hasPrefix("libgps") }, "libgps is linked again: DT_NEEDED \(needed)")
    }

    /// At run time: nothing maps libgps until a connection is attempted; then it is mapped,
    /// loaded once even when the first connections race.
    @Test func libgpsIsMappedFromTheFirstConnectionAttemptOn() throws {
        // Maps first, then the loader's state: the loader maps libgps under the lock that
        // `isLoaded` takes, so "mapped but not loaded" can only mean someone else mapped it (the
        // link is back). If another test already connected, the "before" half proves nothing and
        // the DT_NEEDED test above still stands.
        let mappedBefore = try Self.libgpsIsMapped()
        let loadedBefore = GPSDLibrary.isLoaded
        if !loadedBefore {
            #expect(!mappedBefore, "libgps is mapped before any gpsd connection was attempted")
        }
        let port = try FreePort.next()  // nobody listens: the attempt loads libgps, then fails
        let identities = Mutex<Set<ObjectIdentifier>>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                _ = try GPSDConnection(host: "127.0.0.1", port: port)
                failures.withLock { $0.append("connected to 127.0.0.1:\(port), where nobody listens") }
            } catch let error as GPSDError {
                if error.isLibraryUnavailable { failures.withLock { $0.append(error.description) } }
            } catch {
                failures.withLock { $0.append("unexpected \(error)") }
            }
            if let library = try? LibraryLoader.shared.library() {
                identities.withLock { _ = $0.insert(ObjectIdentifier(library)) }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(identities.withLock { $0.count } == 1, "libgps loaded more than once")
        #expect(GPSDLibrary.isLoaded)
        #expect(try Self.libgpsIsMapped(), "libgps is not mapped after a connection attempt")
    }

    /// The files tried: the compiled API's soname, then the -dev symlink; the override alone.
    @Test func candidateFilesFollowTheCompiledAPIOrTheOverride() {
        let defaults = LibraryLoader.candidateFiles(override: nil)
        #expect(defaults.last == "libgps.so")
        if GPSDLibrary.apiVersion.hasPrefix("11.") {
            #expect(defaults == ["libgps.so.28", "libgps.so"])
            #expect(LibraryLoader.debianPackage == "libgps28")
        }
        #expect(LibraryLoader.candidateFiles(override: "") == defaults)
        #expect(LibraryLoader.candidateFiles(override: "/opt/gpsd/lib/libgps.so.30") == ["/opt/gpsd/lib/libgps.so.30"])
        #expect(GPSDLibrary.fileEnvironmentVariable == "GEOTRIGGER_LIBGPS")
    }

    /// A missing library fails the connection with an error naming the file, dlerror's text
    /// and the package, not a crash.
    @Test func missingLibgpsFailsTheConnectionWithAClearError() throws {
        let file = "/nonexistent/geotrigger-test/libgps.so.99"
        let loader = LibraryLoader(files: LibraryLoader.candidateFiles(override: file))
        let package = try #require(LibraryLoader.debianPackage)
        let error = try #require(throws: GPSDError.self) {
            _ = try GPSDConnection(host: "127.0.0.1", port: 2947, loader: loader)
        }
        #expect(error.isLibraryUnavailable)
        #expect(error.message.contains("\(file): cannot open shared object file"), "\(error)")
        #expect(error.message.contains("install the Debian package \(package)"), "\(error)")
        #expect(error.message.contains("GEOTRIGGER_LIBGPS"), "\(error)")
        #expect(error.call == "dlopen(\(file))")
        #expect(error.description.hasPrefix("gpsd: cannot load libgps"), "\(error)")
        #expect(!loader.isLoaded)
        // Not kept: the next attempt tries again (and fails again here).
        #expect(throws: GPSDError.self) { _ = try loader.library() }
    }

    /// A library without libgps's functions (libm, already mapped by this process) is refused
    /// with dlsym's error, every file tried is named.
    @Test func libraryWithoutGpsOpenIsRefused() throws {
        let loader = LibraryLoader(files: ["libm.so.6", "/nonexistent/libgps.so.98"])
        let error = try #require(throws: GPSDError.self) { _ = try loader.library() }
        #expect(error.message.contains("undefined symbol: gps_open"), "\(error)")
        #expect(error.message.contains("libm.so.6"), "\(error)")
        #expect(error.message.contains("/nonexistent/libgps.so.98"), "\(error)")
        #expect(error.call == "dlopen(libm.so.6, /nonexistent/libgps.so.98)")
    }
}
