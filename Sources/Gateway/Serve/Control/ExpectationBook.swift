import Store

/// The expected arrivals a gateway knows, and every decision about them: a value-type state
/// machine whose methods return the actions for ``Expectations`` to perform (commit this,
/// ask whether the device is in the fence, clear the retained topic, reject), tested without a
/// broker or a database (`ExpectationBookTests`). Times are passed in.
///
/// An expectation is *open* until it is decided (arrived or missed) or cancelled; a decided one
/// stays *settled* here, so that a retained copy arriving again is cleared again instead of being
/// opened anew: after a restart before the clear went out, and also after the clear came back
/// (the entry is then *cleared*), since a broker restarted from an old save brings the request
/// back. The ``capacity`` most recently cleared ones are kept (the older ones leave, with their
/// rows). Each decision is made once: the first of the device's enters, its stay, and the
/// deadline wins.
struct ExpectationBook: Sendable {
    enum Status: Sendable, Equatable {
        /// Open; `generation` tells this version from a replacement (for stay answers).
        case open(generation: Int)
        /// Decided with the result `resultID`.
        case settled(resultID: String)
    }

    struct Entry: Sendable, Equatable {
        var expectation: ExpectedArrival
        var status: Status
        /// A stay check is on the way: the deadline waits for its answer.
        var checking = false
        /// Settled, and the broker's retained copy was seen cleared: kept to recognise a copy an
        /// old save of the broker brings back (not counted against the open and waiting bound).
        var cleared = false
    }

    enum Action: Sendable, Equatable {
        /// Commit this change.
        case store(ExpectationChange)
        /// Commit this decision (its settling and its result message, in one transaction).
        case decide(ExpectationDecision)
        /// Ask the device's monitor whether it is in the fence now; answer with ``stay(_:generation:since:now:)``.
        case checkStay(ExpectedArrival, generation: Int)
        /// Publish an empty retained message on `PREFIX/expect/ID`.
        case clearRetained(String)
        /// Publish why the payload was rejected on `PREFIX/expect/ID/error`.
        case reject(String, String)
    }

    /// The most open expectations (more are rejected).
    let capacity: Int
    private(set) var entries: [String: Entry] = [:]
    /// Open expectation ids per device.
    private(set) var openByDevice: [String: Set<String>] = [:]
    private(set) var openCount = 0
    /// No open deadline is earlier (a lower bound: an entry that left may have set it; exact
    /// after ``tick(now:)``). Wall-clock time; infinity: nothing open.
    private(set) var nextDeadline = Double.infinity
    private var generation = 0
    /// Clears published and not yet seen coming back, per id.
    private(set) var echoes: [String: Int] = [:]
    /// Settled entries whose retained copy was seen cleared, oldest first (an id may be listed
    /// again; an entry no longer cleared is skipped), and how many are cleared now.
    private var cleared = ClearedRequests()
    var clearedCount: Int { cleared.count }

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Takes the stored rows (at start): settled ones wait for their retained copy to be
    /// cleared; open ones are open again and decided anew from the device's stay, exactly as
    /// when they arrived (the last run may have stored one and stopped, or been killed, before
    /// its check was answered): one ``Action/checkStay(_:generation:)`` each, and their deadline
    /// waits for the answer. `leftOut`: open rows the database holds beyond these (over the cap).
    mutating func restore(_ rows: [ExpectationRow], leftOut: Int = 0) -> [Action] {
        var checks: [Action] = []
        for row in rows {
            if let resultID = row.resultID {
                entries[row.id] = Entry(expectation: ExpectedArrival(row: row), status: .settled(resultID: resultID))
            } else {
                let expectation = ExpectedArrival(row: row)
                let generation = open(expectation)
                entries[row.id]!.checking = true
                checks.append(.checkStay(expectation, generation: generation))
            }
        }
        someLeftOut = leftOut > 0
        return checks
    }

    /// The database holds open rows that the start left out (over the cap): a cancel of an id
    /// the book does not know may be one of them, and deletes its row.
    private(set) var someLeftOut = false

    /// A payload accepted for `expectation.id` at wall time `now`.
    mutating func offer(_ expectation: ExpectedArrival, now: Double) -> [Action] {
        let id = expectation.id
        if let entry = entries[id], entry.expectation.payload == expectation.payload {
            switch entry.status {
            case .open:
                return []  // a retained copy of what is open
            case .settled:
                // A retained copy of a settled one: its clear did not reach the broker, or an old
                // save of the broker brought it back. Cleared again, never decided again.
                if entry.cleared {
                    entries[id]!.cleared = false
                    cleared.left()
                }
                echoes[id, default: 0] += 1
                return [.clearRetained(id)]
            }
        }
        let replacing: Bool = if case .open? = entries[id]?.status { true } else { false }
        // Settled ones leave when their clear comes back; while the broker is away they wait.
        if !replacing, openCount >= capacity || entries.count - clearedCount >= 2 * capacity {
            return [.reject(id, "\(capacity) expectations are open or waiting for their topic to be cleared; cancel one or wait for one to be settled first")]
        }
        remove(id)
        let generation = open(expectation)
        entries[id]!.checking = true
        return [.store(.open(expectation.row)), .checkStay(expectation, generation: generation)]
    }

    /// An empty payload for `id`: a dispatcher's cancel, or the gateway's own clear coming back.
    mutating func cancel(_ id: String) -> [Action] {
        let echo = (echoes[id] ?? 0) > 0
        if echo {
            echoes[id]! -= 1
            if echoes[id] == 0 { echoes[id] = nil }
        }
        guard let entry = entries[id] else {
            guard someLeftOut, !echo else { return [] }
            return [.store(.remove(id, onlySettled: false))]
        }
        switch entry.status {
        case .settled:
            // The broker holds no copy of it any more: kept (and its row) as cleared, to clear
            // it again should an old save of the broker bring it back.
            if entry.cleared { return [] }
            entries[id]!.cleared = true
            echoes[id] = nil
            cleared.added(id)
            return evictCleared()
        case .open:
            // Our clear of an earlier version coming back after a new payload: the new one stays.
            if echo { return [] }
            remove(id)
            return [.store(.remove(id, onlySettled: false))]
        }
    }

    /// Whether `device` has an open expectation (the update path asks this first).
    func hasOpen(device: String) -> Bool { openByDevice[device] != nil }

    /// The device is confirmed inside (layer, fence) since fix time `time` (an enter, or a
    /// stay): the open expectations it meets (`time <= by`) are decided as arrived.
    mutating func arrival(device: String, layer: String, fence: String, time: Double, now: Double) -> [ExpectationDecision] {
        guard let ids = openByDevice[device] else { return [] }
        var decisions: [ExpectationDecision] = []
        for id in ids.sorted() {
            guard let entry = entries[id], entry.expectation.layer == layer, entry.expectation.fence == fence,
                time <= entry.expectation.by else { continue }
            decisions.append(settle(id, .arrived(time), now: now))
        }
        return decisions
    }

    /// The answer to a ``Action/checkStay(_:generation:)``: the device's stay in the fence began
    /// at fix time `since` (nil: it is not inside).
    mutating func stay(_ id: String, generation: Int, since: Double?, now: Double) -> [ExpectationDecision] {
        guard let entry = entries[id], entry.status == .open(generation: generation) else { return [] }
        entries[id]!.checking = false
        if let since, since <= entry.expectation.by { return [settle(id, .arrived(since), now: now)] }
        return tick(now: now)
    }

    /// The wall clock reads `now`: open expectations whose `by` passed are missed (except those
    /// whose stay check has not been answered yet).
    mutating func tick(now: Double) -> [ExpectationDecision] {
        guard now >= nextDeadline else { return [] }
        var due: [String] = []
        var next = Double.infinity
        for (id, entry) in entries {
            guard case .open = entry.status else { continue }
            if entry.expectation.by <= now, !entry.checking {
                due.append(id)
            } else {
                next = min(next, entry.expectation.by)
            }
        }
        // An entry still being checked is looked at again at once (its answer calls tick too).
        nextDeadline = next
        return due.sorted().map { settle($0, .missed, now: now) }
    }

    /// Before publishing the clear of `id` decided as `resultID`: true (and the echo counted)
    /// if that is still what the id holds; a replacement meanwhile keeps its retained payload.
    mutating func clearing(_ id: String, resultID: String) -> Bool {
        guard entries[id]?.status == .settled(resultID: resultID) else { return false }
        echoes[id, default: 0] += 1
        return true
    }

    /// The clear counted by ``clearing(_:resultID:)`` could not be published: it will not come back.
    mutating func clearFailed(_ id: String) {
        guard let count = echoes[id] else { return }
        echoes[id] = count > 1 ? count - 1 : nil
    }

    /// The open expectations, of `device` (nil: all), by deadline then id.
    func open(device: String?) -> [ExpectedArrival] {
        let ids: [String] = device.map { Array(openByDevice[$0] ?? []) }
            ?? entries.compactMap { if case .open = $0.value.status { $0.key } else { nil } }
        return ids.compactMap { entries[$0]?.expectation }.sorted { ($0.by, $0.id) < ($1.by, $1.id) }
    }

    // MARK: Bookkeeping

    /// Past ``capacity`` cleared entries the oldest leave, with their rows.
    private mutating func evictCleared() -> [Action] {
        var actions: [Action] = []
        while let id = cleared.nextOverCapacity(capacity) {
            guard entries[id]?.cleared == true else { continue }
            entries[id] = nil
            cleared.left()
            actions.append(.store(.remove(id, onlySettled: true)))
        }
        return actions
    }

    @discardableResult
    private mutating func open(_ expectation: ExpectedArrival) -> Int {
        generation += 1
        entries[expectation.id] = Entry(expectation: expectation, status: .open(generation: generation))
        openByDevice[expectation.device, default: []].insert(expectation.id)
        openCount += 1
        nextDeadline = min(nextDeadline, expectation.by)
        return generation
    }

    /// Removes `id`'s entry (open or settled).
    private mutating func remove(_ id: String) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        if entry.cleared { cleared.left() }
        guard case .open = entry.status else { return }
        leaveOpen(entry.expectation)
    }

    private mutating func leaveOpen(_ expectation: ExpectedArrival) {
        openCount -= 1
        openByDevice[expectation.device]?.remove(expectation.id)
        if openByDevice[expectation.device]?.isEmpty == true { openByDevice[expectation.device] = nil }
    }

    private mutating func settle(_ id: String, _ outcome: ExpectationDecision.Outcome, now: Double) -> ExpectationDecision {
        let entry = entries[id]!
        let decision = ExpectationDecision(expectation: entry.expectation, outcome: outcome, decided: now)
        leaveOpen(entry.expectation)
        entries[id] = Entry(expectation: entry.expectation, status: .settled(resultID: decision.id))
        return decision
    }
}
