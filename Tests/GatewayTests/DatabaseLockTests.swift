import Foundation
import Testing
import TestSupport
@testable import Gateway

/// The lock that keeps a second `serve` off a database (docs/limits.md), in one process; two
/// processes and a broker: ServeTests.SecondServe.
@Suite struct DatabaseLockTests {
    /// Held, the lock refuses a second taker in the same process too (fcntl alone would not),
    /// naming the holder's PID and what was expected; let go, it is taken again.
    @Test func aHeldLockRefusesASecondTakerUntilItIsLetGo() throws {
        let directory = try TemporaryDirectory(prefix: "dblock")
        let database = directory.file("gateway.db")
        var first: DatabaseLock? = try DatabaseLock(database: database)
        #expect(first?.lockFile == database + ".lock")
        #expect((try? String(contentsOfFile: database + ".lock", encoding: .utf8)) == "\(getpid())\n")
        // Another spelling of the same path names the same file.
        let otherSpelling = directory.path + "/./gateway.db"
        for path in [database, otherSpelling] {
            #expect {
                _ = try DatabaseLock(database: path)
            } throws: { error in
                let text = "\(error)"
                return text.contains("is in use by another geotrigger serve (PID \(getpid()) holds the lock on ")
                    && text.contains("expected one gateway per database")
            }
        }
        // The refusals did not drop the holder's lock (closing a descriptor of a locked file would).
        #expect(throws: DatabaseLock.Failure.self) { _ = try DatabaseLock(database: database) }
        first = nil
        let again = try DatabaseLock(database: database)
        #expect(again.lockFile == database + ".lock")
    }

    /// A symbolic link planted as the lock file is not followed: refused, saying what was expected.
    @Test func aSymbolicLinkAsTheLockFileIsRefused() throws {
        let directory = try TemporaryDirectory(prefix: "dblock-link")
        let database = directory.file("gateway.db")
        _ = try directory.write("target", "")
        try FileManager.default.createSymbolicLink(atPath: database + ".lock", withDestinationPath: directory.file("target"))
        #expect {
            _ = try DatabaseLock(database: database)
        } throws: { error in
            "\(error)".contains("expected a regular file there, not a symbolic link")
        }
    }
}
