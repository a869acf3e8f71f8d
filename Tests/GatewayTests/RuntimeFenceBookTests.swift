import GeotriggerCore
import Testing

@testable import Gateway

/// `RuntimeFenceBook` on its own: no broker, no store, no queue. Each test offers changes,
/// answers the builds it asks for, and checks the actions it returns and what stays live.
@Suite struct RuntimeFenceBookTests {
    typealias Key = RuntimeFenceBook.FenceKey

    /// An unsaved change that deletes the row.
    static let deleted: [UInt8]? = nil

    static func key(_ fence: String, layer: String = "jobs") -> Key { Key(layer: layer, fence: fence) }

    /// A Point fence with a buffer (and `extra` properties, JSON text after a comma).
    static func point(lat: Double = 34.45, extra: String = "") -> [UInt8] {
        Array(#"{"type":"Feature","properties":{"buffer":40\#(extra)},"geometry":{"type":"Point","coordinates":[-119.7,\#(lat)]}}"#.utf8)
    }

    /// A book over one file layer `garden` (no fences), with an empty snapshot.
    static func book(maxFences: Int = 100, maxBytes: Int = 1 << 20, maxPayload: Int = 1 << 20) throws -> RuntimeFenceBook {
        RuntimeFenceBook(
            prefix: "geotriggers", fileLayers: [FenceLayer(name: "garden", file: "fences/garden.geojson", fences: [])],
            configTriggers: nil, namedRuntimeLayers: [], snapshot: try EngineSnapshot(layers: [], configTriggers: nil),
            maxFences: maxFences, maxBytes: maxBytes, maxPayload: maxPayload, rebuildInterval: 0.25, followInterval: 1)
    }

    /// The parser `RuntimeFences` uses, counting its calls.
    final class Parser: @unchecked Sendable {
        var calls = 0
        func callAsFunction(_ key: Key, _ payload: [UInt8]) -> Result<Fence, FenceError> {
            calls += 1
            return RuntimeFences.parse(payload, layer: key.layer, id: key.fence, topic: "geotriggers/fences/\(key.layer)/\(key.fence)")
        }
    }

    static func offer(_ book: inout RuntimeFenceBook, _ key: Key, _ payload: [UInt8], parser: Parser = Parser()) -> [RuntimeFenceBook.Action] {
        book.offer(key, payload: payload) { parser($0, $1) }
    }

    /// The reason of `actions` when they are one rejection of `key`.
    static func rejection(_ actions: [RuntimeFenceBook.Action], of key: Key) -> String? {
        guard actions.count == 1, case .reject(key, let reason) = actions[0] else { return nil }
        return reason
    }

    /// Builds what the book asks for with the real `EngineSnapshot`.
    static func build(_ book: inout RuntimeFenceBook, now: Double) throws -> Int? {
        var followers = RuntimeFenceBook.Followers()
        guard let request = book.rebuildIfDue(now: now, followers: &followers) else { return nil }
        let snapshot = try EngineSnapshot(layers: request.layers, configTriggers: request.configTriggers, reusing: request.reusing)
        return book.built(snapshot)
    }

    /// The ids of runtime layer `layer` in a build request, in order.
    static func ids(_ build: RuntimeFenceBook.Build?, layer: String = "jobs") -> [String]? {
        build?.layers.first { $0.name == layer }?.fences.map(\.id)
    }

    /// A build issue blaming the fence of serial `serial` in runtime layer `layer`.
    static func issue(_ serial: Int, layer: String = "jobs", _ message: String = "refused") -> TriggerIssue {
        TriggerIssue(origin: .layer(name: layer, file: ""), path: [.key("features"), .index(serial)],
                     subject: "layer \"\(layer)\"", key: "", message: message)
    }

    // MARK: Apply

    @Test func anAcceptedFenceIsLiveUnsavedAndBuiltAfterTheInterval() throws {
        var book = try Self.book()
        let a = Self.key("a"), payload = Self.point()
        #expect(Self.offer(&book, a, payload) == [])
        #expect(book.layers["jobs"]?["a"]?.feature == payload)
        #expect(book.dirty && book.unsaved == [a: .some(payload)])
        #expect(try Self.build(&book, now: 10) == 1)
        #expect(!book.dirty && book.previous.isEmpty && book.snapshot.fence(layer: "jobs", id: "a") != nil)
        #expect(book.takeUnsaved().changes == [a: .some(payload)] && book.unsaved.isEmpty)
        // A retained copy of what is live changes nothing; a new version waits for the interval.
        #expect(Self.offer(&book, a, payload) == [] && !book.dirty)
        #expect(Self.offer(&book, a, Self.point(lat: 34.46)) == [] && book.dirty)
        var followers = RuntimeFenceBook.Followers()
        #expect(book.rebuildIfDue(now: 10.2, followers: &followers) == nil)
        #expect(Self.ids(book.rebuildIfDue(now: 10.25, followers: &followers)) == ["a"])
    }

    /// The loop sleeps until the book's work is due, not polling: a change at the end of its
    /// rebuild interval, a failed save at its retry, nothing when nothing waits.
    @Test func theNextDueIsTheIntervalsEndThenTheSaveRetry() throws {
        var book = try Self.book()
        let followers = RuntimeFenceBook.Followers()
        #expect(book.nextDue(followers) == nil)
        #expect(Self.offer(&book, Self.key("a"), Self.point()) == [])
        #expect(try Self.build(&book, now: 10) == 1)
        #expect(Self.offer(&book, Self.key("a"), Self.point(lat: 34.46)) == [])
        #expect(book.nextDue(followers) == 10 + book.rebuildInterval)
        #expect(try Self.build(&book, now: 11) == 2)
        let saves = book.takeUnsaved()
        #expect(book.nextDue(followers) == nil)
        book.saveFailed(saves, now: 12)
        #expect(book.nextDue(followers) == 12 + RuntimeFenceBook.saveRetryDelay)
    }

    @Test func aDeleteRemovesTheFenceAndSavesTheRowsRemoval() throws {
        var book = try Self.book()
        let a = Self.key("a")
        _ = Self.offer(&book, a, Self.point())
        _ = try Self.build(&book, now: 0)
        _ = book.takeUnsaved()
        #expect(Self.offer(&book, a, []) == [])
        #expect(book.layers["jobs"] == nil && book.dirty)
        #expect(book.unsaved == [a: Self.deleted])
        // Unknown: nothing to do.
        #expect(Self.offer(&book, Self.key("zz"), []) == [] && book.unsaved.count == 1)
    }

    /// A broker restarted from an old save sends, at the connect, retained copies the gateway
    /// has since replaced or deleted: the gateway's version wins (published again, or the topic
    /// cleared), nothing changes live, nothing is saved. A retained fence it never had, and a
    /// change published now (not flagged retained), are taken as before.
    @Test func aStaleRetainedCopyIsReplacedByTheGatewaysVersion() throws {
        var book = try Self.book()
        let parser = Parser()
        let (a, b) = (Self.key("a"), Self.key("b"))
        _ = Self.offer(&book, a, Self.point(lat: 34.45))
        _ = Self.offer(&book, b, Self.point(lat: 34.46))
        _ = try Self.build(&book, now: 0)
        _ = book.takeUnsaved()
        // b is deleted after the broker's save.
        _ = Self.offer(&book, b, [])
        _ = try Self.build(&book, now: 1)
        _ = book.takeUnsaved()
        // The old save's copies come back at the connect, flagged retained.
        let old = Self.point(lat: 34.40)
        let r1 = book.offer(a, payload: old, retained: true) { parser($0, $1) }
        #expect(r1 == [.restoreRetained(a, Self.point(lat: 34.45))])
        let r2 = book.offer(b, payload: Self.point(lat: 34.46), retained: true) { parser($0, $1) }
        #expect(r2 == [.restoreRetained(b, nil)])
        #expect(parser.calls == 0, "a stale copy is not even parsed")
        #expect(book.layers["jobs"]?["a"]?.feature == Self.point(lat: 34.45) && book.layers["jobs"]?["b"] == nil)
        let unsaved = book.takeUnsaved().changes
        #expect(!book.dirty && unsaved.isEmpty)
        // The gateway's own copies coming back change nothing.
        let r3 = book.offer(a, payload: Self.point(lat: 34.45), retained: false) { parser($0, $1) }
        let r4 = Self.offer(&book, b, [])
        let r5 = book.offer(a, payload: Self.point(lat: 34.45), retained: true) { parser($0, $1) }
        #expect(r3.isEmpty && r4.isEmpty && r5.isEmpty && !book.dirty)
        // A retained fence the gateway never had is a change made while it was away.
        let c = Self.key("c")
        let r6 = book.offer(c, payload: Self.point(lat: 34.47), retained: true) { parser($0, $1) }
        #expect(r6.isEmpty && book.layers["jobs"]?["c"] != nil && book.dirty)
        // A change published now wins as always, and b added again is no longer deleted.
        let r7 = Self.offer(&book, a, old)
        #expect(r7.isEmpty && book.layers["jobs"]?["a"]?.feature == old)
        let r8 = Self.offer(&book, b, Self.point(lat: 34.48))
        #expect(r8.isEmpty && !book.deleted.contains(b))
        let r9 = book.offer(b, payload: Self.point(lat: 34.48), retained: true) { parser($0, $1) }
        #expect(r9.isEmpty)
    }

    @Test func aDeleteOfAFenceLeftOutAtStartDeletesItsRowAndTheLastClearsTheWarning() throws {
        var book = try Self.book(maxFences: 1)
        #expect(book.fitsAtStart(restored: 0, bytes: 0, size: 10))
        #expect(!book.fitsAtStart(restored: 1, bytes: 10, size: 10))
        book.leaveOut(Self.key("b"))
        book.leaveOut(Self.key("c"))
        #expect(Self.offer(&book, Self.key("b"), []) == [])
        #expect(Self.offer(&book, Self.key("c"), []) == [.leftOutResolved])
        #expect(book.unsaved == [Self.key("b"): Self.deleted, Self.key("c"): Self.deleted] && !book.dirty)
    }

    // MARK: Reject

    @Test func theCheapChecksRejectBeforeParsing() throws {
        var book = try Self.book(maxPayload: 200)
        let parser = Parser()
        #expect(Self.offer(&book, Key(layer: "", fence: "a"), Self.point(), parser: parser)
            == [.reject(Key(layer: "", fence: "a"), "the topic needs a layer and a fence id: geotriggers/fences/LAYER/FENCE_ID")])
        #expect(Self.offer(&book, Self.key("a", layer: "garden"), Self.point(), parser: parser)
            == [.reject(Self.key("a", layer: "garden"), "layer \"garden\" is a file layer (fences/garden.geojson); runtime layers need another name")])
        let big = Self.point(extra: #","pad":"\#(String(repeating: "x", count: 200))""#)
        #expect(Self.offer(&book, Self.key("a"), big, parser: parser)
            == [.reject(Self.key("a"), "the payload is \(big.count) bytes, over the 200 bytes a runtime fence may have")])
        #expect(parser.calls == 0)
        #expect(book.layers.isEmpty && book.unsaved.isEmpty && !book.dirty)
    }

    @Test func aBadPayloadIsRejectedWithTheParsersReasonAndThePreviousVersionStays() throws {
        var book = try Self.book()
        let a = Self.key("a"), first = Self.point()
        _ = Self.offer(&book, a, first)
        _ = try Self.build(&book, now: 0)
        _ = book.takeUnsaved()
        let actions = Self.offer(&book, a, Array("{not json".utf8))
        guard case .reject(let key, let reason)? = actions.first, actions.count == 1 else {
            Issue.record("not one rejection: \(actions)")
            return
        }
        #expect(key == a && reason.contains("geotriggers/fences/jobs/a"))
        let otherID = Self.offer(&book, a, Array(#"{"type":"Feature","id":"b","properties":{"buffer":5},"geometry":{"type":"Point","coordinates":[-119.7,34.45]}}"#.utf8))
        #expect(Self.rejection(otherID, of: a)?.contains(#"the Feature's id "b" differs from the topic's fence id "a""#) == true, "\(otherID)")
        #expect(book.layers["jobs"]?["a"]?.feature == first && !book.dirty && book.unsaved.isEmpty)
    }

    @Test func aNameOverTheLimitIsRejected() throws {
        var book = try Self.book()
        let long = String(repeating: "n", count: RuntimeFences.maxNameBytes + 1)
        let actions = Self.offer(&book, Self.key("a"), Self.point(extra: #","name":"\#(long)""#))
        #expect(Self.rejection(actions, of: Self.key("a"))?.contains("properties.name is 257 bytes; a runtime fence's name is at most 256 bytes") == true,
                "\(actions)")
        #expect(book.layers.isEmpty && !book.dirty)
        // At the limit it is accepted.
        let fits = String(repeating: "n", count: RuntimeFences.maxNameBytes)
        #expect(Self.offer(&book, Self.key("a"), Self.point(extra: #","name":"\#(fits)""#)) == [] && book.dirty)
    }

    /// docs/limits.md: a payload that fails to parse counts against `runtime.maxBytes` (and
    /// `runtime.maxFences`) while its topic holds it; the same payload again (the broker's
    /// retained copy at the next connect) is rejected without being parsed, and once the
    /// budget is taken by junk, more junk is rejected unparsed. A fence or an empty payload on
    /// the topic gives the room back.
    @Test func payloadsThatFailToParseCountAgainstTheBudgetAndAreNotParsedAgain() throws {
        let junk = Array(#"{"type":"Feature","geometry":null,"properties":{"pad":"\#(String(repeating: "x", count: 400))"}}"#.utf8)
        var book = try Self.book(maxBytes: 2 * junk.count + Self.point().count)
        let parser = Parser()
        let first = book.offer(Self.key("j1"), payload: junk, retained: true) { parser($0, $1) }
        #expect(Self.rejection(first, of: Self.key("j1"))?.contains("geometry is null") == true, "\(first)")
        #expect(parser.calls == 1 && book.rejectedBytes == junk.count)
        // At the next connect the broker sends it again: rejected again, not parsed again.
        let again = book.offer(Self.key("j1"), payload: junk, retained: true) { parser($0, $1) }
        #expect(again == first && parser.calls == 1, "\(again); parsed \(parser.calls) times")
        _ = book.offer(Self.key("j2"), payload: junk, retained: true) { parser($0, $1) }
        #expect(parser.calls == 2 && book.rejectedBytes == 2 * junk.count)
        // The budget is taken by the junk and one fence's room: a third junk payload is
        // rejected by its size, unparsed; so is a fence that does not fit beside the junk.
        let third = book.offer(Self.key("j3"), payload: junk, retained: true) { parser($0, $1) }
        #expect(Self.rejection(third, of: Self.key("j3"))?.contains("payloads rejected earlier, still retained on their topics") == true, "\(third)")
        #expect(parser.calls == 2)
        #expect(Self.offer(&book, Self.key("a"), Self.point(), parser: parser) == [] && parser.calls == 3)
        let bigger = Self.offer(&book, Self.key("b"), Self.point(extra: #","p":"x""#), parser: parser)
        #expect(Self.rejection(bigger, of: Self.key("b"))?.contains("over runtime.maxBytes") == true && parser.calls == 3, "\(bigger)")
        // Clearing a junk topic, or a fence on it, gives its room back.
        #expect(Self.offer(&book, Self.key("j1"), [], parser: parser) == [] && book.rejectedBytes == junk.count)
        #expect(Self.offer(&book, Self.key("j2"), Self.point(), parser: parser) == [] && book.rejectedBytes == 0)
        #expect(book.rejected.isEmpty && book.layers["jobs"]?.keys.sorted() == ["a", "j2"])
    }

    /// Rejected payloads count against `runtime.maxFences` too: past it, a new topic's payload
    /// is rejected before it is parsed.
    @Test func rejectedPayloadsCountAgainstMaxFences() throws {
        var book = try Self.book(maxFences: 2)
        let parser = Parser()
        for n in 0..<2 { _ = Self.offer(&book, Self.key("j\(n)"), Array("not json \(n)".utf8), parser: parser) }
        let third = Self.offer(&book, Self.key("a"), Self.point(), parser: parser)
        #expect(Self.rejection(third, of: Self.key("a"))?.contains("0 runtime fences are live and 2 rejected payloads are retained") == true, "\(third)")
        #expect(parser.calls == 2)
    }

    @Test func overMaxBytesIsRejectedWithTheSizesCountingAReplacementWithoutItsOldVersion() throws {
        let payload = Self.point()
        var book = try Self.book(maxBytes: 2 * payload.count + 10)
        let parser = Parser()
        #expect(Self.offer(&book, Self.key("a"), payload, parser: parser) == [])
        #expect(Self.offer(&book, Self.key("b"), payload, parser: parser) == [])
        let third = Self.offer(&book, Self.key("c"), payload, parser: parser)
        let (n, total) = (payload.count, 3 * payload.count)
        #expect(third == [.reject(Self.key("c"), "the payload is \(n) bytes and the other runtime fences hold \(2 * n) bytes: \(total) bytes together, over runtime.maxBytes (\(2 * n + 10)); delete or shrink a fence first")])
        #expect(parser.calls == 2)
        // b replaced by 10 more bytes fits exactly; 11 more do not.
        #expect(Self.offer(&book, Self.key("b"), Self.point(extra: #","p":"xxx""#), parser: parser) == [])
        let over = Self.offer(&book, Self.key("b"), Self.point(extra: #","p":"xxxx""#), parser: parser)
        #expect(Self.rejection(over, of: Self.key("b"))?.hasPrefix("the payload is \(n + 11) bytes and the other runtime fences hold \(n) bytes") == true, "\(over)")
        #expect(book.layers["jobs"]?.keys.sorted() == ["a", "b"] && book.bytes == 2 * n + 10)
    }

    @Test func overMaxFencesANewFenceIsRejectedButAReplacementIsNot() throws {
        var book = try Self.book(maxFences: 1)
        #expect(Self.offer(&book, Self.key("a"), Self.point()) == [])
        #expect(Self.offer(&book, Self.key("b"), Self.point())
            == [.reject(Self.key("b"), "1 runtime fences are live (runtime.maxFences); delete one first")])
        #expect(Self.offer(&book, Self.key("a"), Self.point(lat: 34.5)) == [])
        #expect(book.fenceCount == 1 && book.unsaved.keys.map(\.fence) == ["a"])
    }

    // MARK: Roll back

    @Test func aFenceTheBuildRefusesGoesBackToItsPreviousVersionAndIsNotSaved() throws {
        var book = try Self.book()
        let a = Self.key("a"), b = Self.key("b"), first = Self.point()
        _ = Self.offer(&book, a, first)
        _ = try Self.build(&book, now: 0)
        _ = book.takeUnsaved()
        let firstSerial = try #require(book.layers["jobs"]?["a"]?.fence.featureIndex)
        // A new version of a and a new fence b, both refused by the build.
        _ = Self.offer(&book, a, Self.point(lat: 34.5))
        _ = Self.offer(&book, b, Self.point(lat: 34.6))
        var followers = RuntimeFenceBook.Followers()
        let request = try #require(book.rebuildIfDue(now: 1, followers: &followers))
        let serials = try #require(request.layers.first { $0.name == "jobs" }?.fences.map(\.featureIndex))
        #expect(serials.count == 2 && !serials.contains(firstSerial))
        let rollback = book.buildFailed(serials.map { Self.issue($0) })
        #expect(rollback.actions == [.reject(a, "refused"), .reject(b, "refused")])
        // Built again with the previous set: a's first version only.
        #expect(Self.ids(rollback.retry) == ["a"])
        #expect(rollback.retry?.layers.first { $0.name == "jobs" }?.fences.first?.featureIndex == firstSerial)
        #expect(book.layers["jobs"]?["a"]?.feature == first && book.layers["jobs"]?["b"] == nil)
        #expect(book.unsaved.isEmpty)
        #expect(book.built(try EngineSnapshot(layers: rollback.retry!.layers, configTriggers: nil)) == 2)
        #expect(!book.dirty && book.previous.isEmpty)
    }

    @Test func aProblemNoFenceIsBlamedForKeepsTheLiveSnapshotAndDropsTheBatch() throws {
        var book = try Self.book()
        _ = Self.offer(&book, Self.key("a"), Self.point())
        var followers = RuntimeFenceBook.Followers()
        #expect(book.rebuildIfDue(now: 0, followers: &followers) != nil)
        let problem = TriggerIssue(origin: .config, path: [.key("triggers")], subject: "triggers[0]", key: "rule", message: "bad")
        let rollback = book.buildFailed([problem])
        #expect(rollback.actions == [.buildProblem("triggers[0]: rule: bad")] && rollback.retry == nil)
        #expect(!book.dirty && book.generation == 0)
    }

    @Test func aBuildIsTriedThreeTimesAtMostThenTheChangesWait() throws {
        var book = try Self.book()
        for id in ["a", "b", "c", "d"] { _ = Self.offer(&book, Self.key(id), Self.point()) }
        var followers = RuntimeFenceBook.Followers()
        var request = book.rebuildIfDue(now: 0, followers: &followers)
        var attempts = 0
        while let current = request {
            attempts += 1
            let serial = try #require(current.layers.first { $0.name == "jobs" }?.fences.first?.featureIndex)
            request = book.buildFailed([Self.issue(serial)]).retry
        }
        #expect(attempts == RuntimeFenceBook.buildAttempts)
        #expect(book.layers["jobs"]?.keys.sorted() == ["d"] && book.dirty && book.generation == 0)
    }

    @Test func theRealBuilderRollsBackAFenceItRefuses() throws {
        // A trigger whose rule needs an area: a Point without a buffer is refused by the build.
        var book = RuntimeFenceBook(
            prefix: "geotriggers", fileLayers: [], configTriggers: .array([.object(["name": .string("jobs"), "fences": .array([.string("jobs")])])]),
            namedRuntimeLayers: ["jobs"], snapshot: try EngineSnapshot(layers: [], configTriggers: nil),
            maxFences: 10, maxBytes: 1 << 20, maxPayload: 1 << 20, rebuildInterval: 0, followInterval: 1)
        let good = Self.point()
        let bare = Array(#"{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[-119.7,34.45]}}"#.utf8)
        #expect(Self.offer(&book, Self.key("a"), good) == [])
        #expect(Self.offer(&book, Self.key("b"), bare) == [])
        let (built, actions) = RuntimeFences.build(&book)
        #expect(built?.generation == 1)
        #expect(actions.count == 1 && actions.first.map { if case .reject(Self.key("b"), _) = $0 { true } else { false } } == true, "\(actions)")
        #expect(book.snapshot.fence(layer: "jobs", id: "a") != nil && book.snapshot.fence(layer: "jobs", id: "b") == nil)
        #expect(book.unsaved.keys.map(\.fence) == ["a"])
    }

    // MARK: Follow

    @Test func aFollowingFenceMovesToItsDevicesLatestPositionAtMostOncePerInterval() throws {
        var book = try Self.book()
        let f = Self.key("f")
        _ = Self.offer(&book, f, Self.point(extra: #","follow":"v1""#))
        _ = Self.offer(&book, Self.key("still"), Self.point())
        _ = try Self.build(&book, now: 0)
        _ = book.takeUnsaved()
        #expect(book.following() == ["v1": [f]])
        var followers = RuntimeFenceBook.Followers()
        followers.follow(book.following())
        #expect(followers.isFollowed("v1") && !followers.isFollowed("v2"))
        followers.moved("v2", to: Coordinate(lat: 1, lon: 1))  // followed by none: ignored
        #expect(!followers.positionWaiting && !book.workRemaining(followers))
        followers.moved("v1", to: Coordinate(lat: 34.4, lon: -119.6))
        followers.moved("v1", to: Coordinate(lat: 34.41, lon: -119.61))  // the latest wins
        #expect(followers.positionWaiting && book.workRemaining(followers))
        #expect(Self.ids(book.rebuildIfDue(now: 10, followers: &followers)) == ["f", "still"])
        #expect(book.layers["jobs"]?["f"]?.fence.geometry == .points([Coordinate(lat: 34.41, lon: -119.61)]))
        #expect(book.layers["jobs"]?["still"]?.fence.geometry == .points([Coordinate(lat: 34.45, lon: -119.7)]))
        #expect(!followers.positionWaiting)
        // Within the interval the position waits; after it the fence moves.
        followers.moved("v1", to: Coordinate(lat: 34.42, lon: -119.62))
        #expect(!book.moveFollowing(&followers, now: 10.5) && followers.positionWaiting)
        #expect(book.moveFollowing(&followers, now: 11))
        #expect(book.layers["jobs"]?["f"]?.fence.geometry == .points([Coordinate(lat: 34.42, lon: -119.62)]))
        // Once no fence follows it, its waiting position is dropped.
        followers.moved("v1", to: Coordinate(lat: 34.43, lon: -119.63))
        followers.follow([:])
        #expect(!followers.positionWaiting && !followers.isFollowed("v1"))
    }

    // MARK: Save

    @Test func aFailedSaveIsRetriedAfterASecondUnlessANewerChangeCame() throws {
        var book = try Self.book()
        let a = Self.key("a"), b = Self.key("b"), pa = Self.point(), pb = Self.point(lat: 34.5)
        _ = Self.offer(&book, a, pa)
        _ = Self.offer(&book, b, pb)
        _ = try Self.build(&book, now: 0)
        let saves = book.takeUnsaved()
        #expect(saves.changes == [a: .some(pa), b: .some(pb)])
        // Meanwhile b is deleted: the failed save must not bring its old payload back.
        _ = Self.offer(&book, b, [])
        book.saveFailed(saves, now: 5)
        #expect(book.unsaved == [a: .some(pa), b: Self.deleted] && book.saveRetry == 6)
        // While a rebuild waits, the rebuild saves them; so build first.
        #expect(book.retryDue(now: 7).isEmpty)
        _ = try Self.build(&book, now: 7)
        #expect(book.retryDue(now: 5.5).isEmpty && book.workRemaining(RuntimeFenceBook.Followers()))
        #expect(book.retryDue(now: 6).changes == [a: .some(pa), b: Self.deleted])
        #expect(book.unsaved.isEmpty && !book.workRemaining(RuntimeFenceBook.Followers()))
        // At shutdown whatever is unsaved goes at once.
        _ = Self.offer(&book, a, Self.point(lat: 34.7))
        #expect(book.retryDue(now: 0, force: true).changes == [a: .some(Self.point(lat: 34.7))])
    }

    /// A save from the loop and one from a SIGHUP reload: a's version 1 taken by one, version 2
    /// by the other and written first; then version 1's write fails. It must not give version 1
    /// back (its retry would write it over version 2).
    @Test func aFailedSaveGivesNothingBackThatALaterTakeHolds() throws {
        var book = try Self.book()
        let a = Self.key("a"), v1 = Self.point(), v2 = Self.point(lat: 34.5)
        _ = Self.offer(&book, a, v1)
        _ = try Self.build(&book, now: 0)
        let first = book.takeUnsaved()
        _ = Self.offer(&book, a, v2)
        _ = try Self.build(&book, now: 1)
        let second = book.takeUnsaved()
        #expect(first.changes == [a: .some(v1)] && second.changes == [a: .some(v2)] && second.turn == first.turn + 1)
        book.saved(second)
        book.saveFailed(first, now: 2)
        #expect(book.unsaved.isEmpty)
        #expect(book.retryDue(now: 10, force: true).isEmpty)
        // The other way round: the later take fails, the earlier one was written: the later one is retried.
        _ = Self.offer(&book, a, v1)
        _ = try Self.build(&book, now: 20)
        let third = book.takeUnsaved()
        book.saveFailed(third, now: 21)
        #expect(book.unsaved == [a: .some(v1)])
    }

    // MARK: Reload

    @Test func aReloadTakesTheNewFileLayersAndBuildsAtOnce() throws {
        var book = try Self.book()
        _ = Self.offer(&book, Self.key("a"), Self.point())
        _ = try Self.build(&book, now: 100)
        book.reload(fileLayers: [], configTriggers: nil, namedRuntimeLayers: ["extra"])
        var followers = RuntimeFenceBook.Followers()
        let request = try #require(book.rebuildIfDue(now: 100.01, followers: &followers))
        #expect(request.layers.map(\.name) == ["extra", "jobs"])
        // garden is no file layer any more: a runtime fence may use its name.
        #expect(Self.offer(&book, Self.key("x", layer: "garden"), Self.point()) == [])
    }
}
