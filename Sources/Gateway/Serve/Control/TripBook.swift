import Store

/// The trips a gateway knows, and every decision about their requests: a value-type state
/// machine whose methods return the actions for ``Trips`` to perform (commit this, assign or
/// cancel in the device's shard, clear the retained request, reject), tested without a broker,
/// a shard or a database (`TripBookTests`). What a trip decides along its route is its shard's
/// (``TripProgress``); the book keeps the requests, the budgets and the settling.
///
/// A trip is *open* from its request until it arrives or is missed (its shard says so with
/// ``ended(_:created:)``) or is cancelled; an ended one stays *settled* here, so that a retained
/// copy of its request coming back is cleared again instead of being opened anew (after a
/// restart before the clear went out, or a broker restarted from an old save), and also once the
/// clear has come back (*cleared*). The ``capacity`` most recently cleared ones are kept.
struct TripBook: Sendable {
    struct Entry: Sendable, Equatable {
        var device: String
        var payload: [UInt8]
        /// When it was accepted (wall clock, whole milliseconds).
        var created: Double
        /// What it counts against `runtime.maxBytes` while open.
        var bytes: Int
        var open: Bool
        /// Settled, and the broker's retained request was seen cleared.
        var cleared = false
    }

    enum Action: Sendable {
        /// Commit this change.
        case store(TripChange)
        /// Have the device's shard follow this trip.
        case assign(TripRequest)
        /// Have the device's shard stop following trip `id` (created at `created`); `clearProgress`:
        /// clear its progress topic.
        case cancel(id: String, device: String, created: Double, clearProgress: Bool)
        /// Publish an empty retained message on `PREFIX/trips/TRIP_ID`.
        case clearRetained(String)
        /// Publish why the payload was rejected on `PREFIX/trips/TRIP_ID/error`.
        case reject(String, String)
    }

    /// The most open trips (more are rejected).
    let capacity: Int
    private(set) var entries: [String: Entry] = [:]
    private(set) var openCount = 0
    /// What the open trips count against `runtime.maxBytes` together.
    private(set) var openBytes = 0
    /// Clears published and not yet seen coming back, per id.
    private(set) var echoes: [String: Int] = [:]
    /// Settled entries whose retained request was seen cleared, oldest first (an id may be
    /// listed again; an entry no longer cleared is skipped), and how many are cleared now.
    private var cleared = ClearedRequests()
    var clearedCount: Int { cleared.count }

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// A stored open trip, read again at start (`bytes`: its request's, as parsed again).
    mutating func restoreOpen(_ row: TripRow, bytes: Int) {
        entries[row.id] = Entry(device: row.device, payload: row.payload, created: row.created, bytes: bytes, open: true)
        openCount += 1
        openBytes += bytes
    }

    /// A stored settled trip, read again at start: a retained copy of its request is cleared.
    mutating func restoreSettled(_ row: TripRow) {
        entries[row.id] = Entry(device: row.device, payload: row.payload, created: row.created, bytes: 0, open: false)
    }

    /// A request accepted for `request.id`; `budget`: the bytes of `runtime.maxBytes` that the
    /// runtime fences leave to trips.
    mutating func offer(_ request: TripRequest, budget: Int) -> [Action] {
        let id = request.id
        if let entry = entries[id], entry.payload == request.payload {
            // A retained copy of what is open, or of a settled trip (its clear did not reach the
            // broker, or an old save brought it back): cleared again, never followed again.
            guard !entry.open else { return [] }
            if entry.cleared {
                entries[id]!.cleared = false
                cleared.left()
            }
            echoes[id, default: 0] += 1
            return [.clearRetained(id)]
        }
        let replaced = entries[id].flatMap { $0.open ? $0 : nil }
        if replaced == nil, openCount >= capacity {
            return [.reject(id, "\(capacity) trips are open; cancel one or wait for one to end first")]
        }
        let others = openBytes - (replaced?.bytes ?? 0)
        if others + request.bytes > budget {
            return [.reject(id, "the trip holds \(request.bytes) bytes (its payload and its prepared route) and the other trips \(others) "
                + "of the \(budget) bytes that runtime.maxBytes leaves beside the runtime fences; cancel a trip first")]
        }
        var actions: [Action] = []
        if let replaced {
            // Its progress is cleared only on the same device, in order in that device's shard;
            // another device's first progress replaces it.
            actions.append(.cancel(id: id, device: replaced.device, created: replaced.created, clearProgress: replaced.device == request.device))
        }
        remove(id)
        entries[id] = Entry(device: request.device, payload: request.payload, created: request.created, bytes: request.bytes, open: true)
        openCount += 1
        openBytes += request.bytes
        actions += [.store(.open(request.row)), .assign(request)]
        return actions
    }

    /// An empty payload for `id`: a dispatcher's cancel, or the gateway's own clear coming back.
    mutating func cancel(_ id: String) -> [Action] {
        let echo = (echoes[id] ?? 0) > 0
        if echo {
            echoes[id]! -= 1
            if echoes[id] == 0 { echoes[id] = nil }
        }
        guard let entry = entries[id] else { return [] }
        guard entry.open else {
            // The broker holds no copy any more: kept (and its row) as cleared, to clear it again
            // should an old save of the broker bring it back.
            if entry.cleared { return [] }
            entries[id]!.cleared = true
            echoes[id] = nil
            cleared.added(id)
            return evictCleared()
        }
        // Our clear of an earlier version coming back after a new payload: the new one stays.
        if echo { return [] }
        remove(id)
        return [.store(.remove(id, onlySettled: false)), .cancel(id: id, device: entry.device, created: entry.created, clearProgress: true)]
    }

    /// The shard says trip `id` created at `created` arrived or was missed: it is settled (false
    /// when that is no longer what the id holds: cancelled or replaced meanwhile).
    mutating func ended(_ id: String, created: Double) -> Bool {
        guard let entry = entries[id], entry.open, entry.created == created else { return false }
        entries[id]!.open = false
        openCount -= 1
        openBytes -= entry.bytes
        return true
    }

    /// Before publishing the clear of `id`'s request, settled as created at `created`: true (and
    /// the echo counted) if that is still what the id holds.
    mutating func clearing(_ id: String, created: Double) -> Bool {
        guard let entry = entries[id], !entry.open, entry.created == created else { return false }
        echoes[id, default: 0] += 1
        return true
    }

    /// The clear counted by ``clearing(_:created:)`` could not be published: it will not come back.
    mutating func clearFailed(_ id: String) {
        guard let count = echoes[id] else { return }
        echoes[id] = count > 1 ? count - 1 : nil
    }

    /// Whether `id` holds a settled trip created at `created`.
    func isSettled(_ id: String, created: Double) -> Bool {
        entries[id].map { !$0.open && $0.created == created } ?? false
    }

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

    /// Removes `id`'s entry (open or settled).
    private mutating func remove(_ id: String) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        if entry.cleared { cleared.left() }
        if entry.open {
            openCount -= 1
            openBytes -= entry.bytes
        }
    }
}
