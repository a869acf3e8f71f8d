import Foundation
import Store
import Testing
import TestSupport
@testable import Gateway

@Suite struct SpillFileTests {
    /// What is appended reads back merged in order; a line cut by a kill is skipped and counted.
    @Test func batchesReadBackInOrder() throws {
        let directory = try TemporaryDirectory()
        let spill = SpillFile(path: directory.file("spill.jsonl"))
        #expect(try spill.read() == nil)
        let first = StoreBatch(
            stateChanges: [DeviceStateChange(device: "a/b", state: [0, 1, 255])],
            events: [JournalEvent(id: "e1", device: "a/b", trigger: "t", layer: "l", fence: "f", type: "enter",
                                  fixTime: 1.5, emittedTime: 2.25, payload: #"{"id":"e1"}"#)],
            outbox: [OutboxMessage(destination: .remote, eventID: "e1", topic: "p/events/t/a/b", payload: Array(#"{"id":"e1"}"#.utf8),
                                   qos: 1, payloadInJournal: true)])
        let second = StoreBatch(stateChanges: [DeviceStateChange(device: "a/b", state: nil)])
        try spill.append(first)
        try spill.append(second)
        let read = try #require(try spill.read())
        #expect(read.unreadable == 0)
        // Each state counts the events before it in the file (the one of the first batch).
        let states = (first.stateChanges + second.stateChanges).map { DeviceStateChange(device: $0.device, state: $0.state, eventsBefore: 1) }
        #expect(read.batch == StoreBatch(stateChanges: states, events: first.events, outbox: first.outbox))
        let handle = try #require(FileHandle(forWritingAtPath: spill.path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"states":[{"device":"x""#.utf8))
        handle.closeFile()
        #expect(try spill.read()?.unreadable == 1)
        spill.remove()
        #expect(try spill.read() == nil)
    }

    /// A run killed between the commit that took the spill file's batches and the file's
    /// removal leaves a file whose events the journal holds: the next start skips those (no
    /// event twice in the journal, none sent twice from it) and commits the rest.
    @Test func aSpillFileTheDatabaseTookAlreadyAddsNoEventTwice() async throws {
        let directory = try TemporaryDirectory()
        let spill = SpillFile(path: directory.file("spill.jsonl"))
        try spill.append(Self.batch("e1"))
        try spill.append(Self.batch("e2"))
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        _ = try await store.commit(StoreBatch(events: Self.batch("e1").events + Self.batch("e2").events))  // then the kill
        try spill.append(Self.batch("e3"))  // refused after that commit
        let warnings = Warnings(logger: Logger(label: "test"))
        let retry = await GatewayServer.applySpill(spill, to: store, warnings: warnings, logger: Logger(label: "test"))
        #expect(retry.isEmpty)
        #expect(try spill.read() == nil)
        #expect(try await store.events(JournalQuery()).map(\.event.id) == ["e1", "e2", "e3"])
        #expect(try await store.deviceStates() == ["d/e1": [1, 2, 3], "d/e2": [1, 2, 3], "d/e3": [1, 2, 3]])
        await store.close()
    }

    @Test func pathPerDatabase() {
        let a = SpillFile.path(forDatabase: "/var/lib/geotrigger/a.db", environment: ["RUNTIME_DIRECTORY": "/run/geotrigger"])
        let b = SpillFile.path(forDatabase: "/var/lib/geotrigger/b.db", environment: ["RUNTIME_DIRECTORY": "/run/geotrigger"])
        #expect(a.hasPrefix("/run/geotrigger/geotrigger-spill-") && a != b)
        #expect(SpillFile.path(forDatabase: "/x/a.db", environment: [:]).hasPrefix("/dev/shm/"))
    }

    /// One refused batch of one event whose payload is `size` bytes.
    static func batch(_ id: String, size: Int = 200) -> StoreBatch {
        let payload = #"{"id":"\#(id)","pad":"\#(String(repeating: "x", count: size))"}"#
        return StoreBatch(
            stateChanges: [DeviceStateChange(device: "d/\(id)", state: [1, 2, 3])],
            events: [JournalEvent(id: id, device: "d/\(id)", trigger: "t", layer: "l", fence: "f", type: "enter",
                                  fixTime: 1, emittedTime: 2, payload: payload)])
    }

    /// The mode bits and owner of `path` itself (a symbolic link is not followed).
    static func owner(_ path: String) -> (mode: mode_t, uid: uid_t, isLink: Bool)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode & 0o7777, info.st_uid, info.st_mode & S_IFMT == S_IFLNK)
    }

    /// A symbolic link planted at the spill file's path is never followed: appending refuses
    /// (the file it points to is unchanged), and a start refuses to apply what it points to,
    /// with a warning naming the path.
    @Test func plantedSymlinkIsNotFollowed() async throws {
        let directory = try TemporaryDirectory()
        let outside = directory.file("outside.jsonl")
        try Data((SpillFile.encode(Self.batch("planted")).serialized() + "\n").utf8).write(to: URL(fileURLWithPath: outside))
        #expect(chmod(outside, 0o600) == 0)
        let before = try Data(contentsOf: URL(fileURLWithPath: outside))
        let spill = SpillFile(path: directory.file("spill.jsonl"))
        #expect(symlink(outside, spill.path) == 0)

        #expect(throws: SpillError.self) { try spill.append(Self.batch("mine")) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == before)

        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let warnings = Warnings(logger: Logger(label: "test"))
        let retry = await GatewayServer.applySpill(spill, to: store, warnings: warnings, logger: Logger(label: "test"))
        #expect(retry.isEmpty)
        #expect(try await store.journalCount() == 0)
        #expect(warnings.texts.count == 1 && warnings.texts.first?.contains("\(spill.path) is a symbolic link") == true, "\(warnings.texts)")
        #expect(Self.owner(spill.path)?.isLink == true, "the planted link is left for the operator to look at")
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == before)
        await store.close()
    }

    /// A spill file that is not 0600 is refused at start, with a warning naming the path, the
    /// mode found and the one expected: never applied, never removed.
    @Test func spillFileNot0600IsRefusedAndNotApplied() async throws {
        let directory = try TemporaryDirectory()
        let spill = SpillFile(path: directory.file("spill.jsonl"))
        try spill.append(Self.batch("e1"))
        #expect(chmod(spill.path, 0o644) == 0)
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let warnings = Warnings(logger: Logger(label: "test"))
        let retry = await GatewayServer.applySpill(spill, to: store, warnings: warnings, logger: Logger(label: "test"))
        #expect(retry.isEmpty)
        #expect(try await store.journalCount() == 0)
        #expect(try await store.deviceStates().isEmpty)
        let text = warnings.texts.first ?? ""
        #expect(warnings.texts.count == 1 && text.contains(spill.path) && text.contains("mode 0644") && text.contains("0600"), "\(warnings.texts)")
        #expect(Self.owner(spill.path)?.mode == 0o644, "left in place")
        // Nor is anything appended to it.
        #expect(throws: SpillError.self) { try spill.append(Self.batch("e2")) }
        await store.close()
    }

    /// A spill file owned by another user is refused the same way (needs root to plant one).
    @Test(.enabled(if: geteuid() == 0, "chown needs root"))
    func spillFileOfAnotherUserIsRefused() async throws {
        let directory = try TemporaryDirectory()
        let spill = SpillFile(path: directory.file("spill.jsonl"))
        try spill.append(Self.batch("e1"))
        #expect(chown(spill.path, 65534, 65534) == 0)
        let store = try await GatewayStore(path: directory.file("gateway.db"))
        let warnings = Warnings(logger: Logger(label: "test"))
        let retry = await GatewayServer.applySpill(spill, to: store, warnings: warnings, logger: Logger(label: "test"))
        #expect(retry.isEmpty)
        #expect(try await store.journalCount() == 0)
        let text = warnings.texts.first ?? ""
        #expect(text.contains(spill.path) && text.contains("owned by uid 65534") && text.contains("uid \(geteuid())"), "\(warnings.texts)")
        await store.close()
    }

    /// Past its cap the spill file drops its oldest batches and counts them (batches and the
    /// events in them); it never grows past the cap and stays 0600.
    @Test func capDropsTheOldestAndCountsThem() throws {
        let directory = try TemporaryDirectory()
        let line = SpillFile.encode(Self.batch("e0")).serializedBytes().count + 1
        let spill = SpillFile(path: directory.file("spill.jsonl"), cap: 3 * line + line / 2)
        // A link planted at the name of the file a trim writes is removed, never followed.
        let elsewhere = try TemporaryDirectory()
        let outside = try elsewhere.write("outside", "not yours\n")
        #expect(symlink(outside, spill.path + ".tmp") == 0)
        var dropped: [SpillFile.Dropped] = []
        for n in 0..<5 { dropped.append(try spill.append(Self.batch("e\(n)"))) }
        #expect(try String(contentsOfFile: outside, encoding: .utf8) == "not yours\n")
        #expect(dropped.map(\.batches) == [0, 0, 0, 1, 1])
        #expect(dropped.map(\.events) == [0, 0, 0, 1, 1])
        let read = try #require(try spill.read())
        #expect(read.batch.events.map(\.id) == ["e2", "e3", "e4"])
        #expect(read.batch.stateChanges.map(\.device) == ["d/e2", "d/e3", "d/e4"])
        #expect(read.unreadable == 0)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: spill.path)[.size] as? Int)
        #expect(size <= spill.cap && size == 3 * line)
        #expect(Self.owner(spill.path)?.mode == 0o600)
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["spill.jsonl"])
        // A batch larger than the whole cap is dropped with everything before it.
        let huge = try spill.append(Self.batch("big", size: 4 * line))
        #expect(huge.batches == 4 && huge.events == 4)
        #expect(try spill.read()?.batch.events.isEmpty == true)
    }
}
