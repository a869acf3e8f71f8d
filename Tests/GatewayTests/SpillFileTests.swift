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
        #expect(spill.read() == nil)
        let first = StoreBatch(
            stateChanges: [DeviceStateChange(device: "a/b", state: [0, 1, 255])],
            events: [JournalEvent(id: "e1", device: "a/b", trigger: "t", layer: "l", fence: "f", type: "enter",
                                  fixTime: 1.5, emittedTime: 2.25, payload: #"{"id":"e1"}"#)],
            outbox: [OutboxMessage(destination: .remote, eventID: "e1", topic: "p/events/t/a/b", payload: Array(#"{"id":"e1"}"#.utf8),
                                   qos: 1, payloadInJournal: true)])
        let second = StoreBatch(stateChanges: [DeviceStateChange(device: "a/b", state: nil)])
        try spill.append(first)
        try spill.append(second)
        let read = try #require(spill.read())
        #expect(read.unreadable == 0)
        #expect(read.batch == StoreBatch(stateChanges: first.stateChanges + second.stateChanges, events: first.events, outbox: first.outbox))
        let handle = try #require(FileHandle(forWritingAtPath: spill.path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"states":[{"device":"x""#.utf8))
        handle.closeFile()
        #expect(spill.read()?.unreadable == 1)
        spill.remove()
        #expect(spill.read() == nil)
    }

    @Test func pathPerDatabase() {
        let a = SpillFile.path(forDatabase: "/var/lib/geotrigger/a.db", environment: ["RUNTIME_DIRECTORY": "/run/geotrigger"])
        let b = SpillFile.path(forDatabase: "/var/lib/geotrigger/b.db", environment: ["RUNTIME_DIRECTORY": "/run/geotrigger"])
        #expect(a.hasPrefix("/run/geotrigger/geotrigger-spill-") && a != b)
        #expect(SpillFile.path(forDatabase: "/x/a.db", environment: [:]).hasPrefix("/dev/shm/"))
    }
}
