/// One journaled event as the fold reads it: what it decided for its device's state.
public struct FoldedEvent: Sendable, Equatable {
    public var sequence: Int64
    public var type: String
    public var trigger: String
    public var layer: String
    public var fence: String
    /// The fix time that decided it.
    public var fixTime: Double
    /// Its position (`position.time` as the payload has it, ISO-8601) and distance, where present.
    public var latitude: Double?
    public var longitude: Double?
    public var positionTime: String?
    public var accuracy: Double?
    public var distance: Double?

    public init(sequence: Int64, type: String, trigger: String, layer: String, fence: String, fixTime: Double,
                latitude: Double? = nil, longitude: Double? = nil, positionTime: String? = nil, accuracy: Double? = nil,
                distance: Double? = nil) {
        (self.sequence, self.type, self.trigger, self.layer, self.fence, self.fixTime) = (sequence, type, trigger, layer, fence, fixTime)
        (self.latitude, self.longitude, self.positionTime, self.accuracy, self.distance) = (latitude, longitude, positionTime, accuracy, distance)
    }
}

/// How a device's stored state takes the journal's later events (the gateway's engine does it):
/// returns the new state bytes, or nil to leave the row as it is (bytes it cannot read).
public typealias StateFold = @Sendable (_ state: [UInt8], _ events: [FoldedEvent]) -> [UInt8]?

extension GatewayStore {
    /// A step whose decisions its journaled events tell writes no `device_state` row: the
    /// journal's rows are its state change. Each row of `device_state` is the device's state as
    /// of its `journal_seq` (the newest journal sequence given before it was written), and
    /// `state_fold` holds the sequence up to which the journal's events are in those rows.
    /// Folding applies the events after that mark to their devices' rows (only those after a
    /// row's own `journal_seq`) and moves the mark on, in one transaction: at the start (after
    /// a `kill -9`, before any state is read) and every ``foldEvery`` events while running, in
    /// transactions of ``foldBatch`` events, each a job of its own between commits. Retention
    /// keeps every event after the mark.
    public static let foldEvery: Int64 = 16_384
    public static let foldBatch = 4096

    /// Installs how states take events (``StateFold``); from then on the store folds on its
    /// own every ``foldEvery`` journaled events, as a job of its own between commits.
    public func setStateFold(_ fold: @escaping StateFold) { stateFold = fold }

    /// Events journaled after the fold's mark.
    public var unfoldedEvents: Int64 { nextJournalSequence - 1 - foldedJournalSequence }

    /// Folds the events after the mark into `device_state` (``foldEvery`` explains), in
    /// transactions of at most `batch` events, at most `transactions` of them (all by
    /// default); returns how many events it folded and how many device rows it wrote. A device
    /// without a row (forgotten) is skipped.
    @discardableResult
    public func foldJournal(batch: Int = GatewayStore.foldBatch, transactions: Int = .max) throws -> (events: Int, devices: Int) {
        executor.checkIsolated()
        guard let fold = stateFold else { return (0, 0) }
        if options.readOnly { throw StoreError.readOnly(path: path) }
        let connection = try openConnection()
        var total = (events: 0, devices: 0)
        for _ in 0..<max(transactions, 1) {
            let from = foldedJournalSequence
            var byDevice: [String: [FoldedEvent]] = [:]
            var order: [String] = []
            var last = from
            var count = 0
            try connection.forEachRow("""
                SELECT seq, fix_time, json_extract(payload, '$.device'), json_extract(payload, '$.type'),
                       json_extract(payload, '$.trigger'), json_extract(payload, '$.fence.layer'), json_extract(payload, '$.fence.id'),
                       json_extract(payload, '$.position.lat'), json_extract(payload, '$.position.lon'),
                       json_extract(payload, '$.position.time'), json_extract(payload, '$.position.accuracy'),
                       json_extract(payload, '$.distance')
                FROM journal WHERE seq > ? ORDER BY seq LIMIT ?
                """, [.integer(from), .integer(Int64(max(batch, 1)))]) { row in
                count += 1
                last = row.int64(0)
                let device = row.string(2)
                let event = FoldedEvent(
                    sequence: last, type: row.string(3), trigger: row.string(4), layer: row.string(5), fence: row.string(6),
                    fixTime: row.double(1), latitude: row.isNull(7) ? nil : row.double(7), longitude: row.isNull(8) ? nil : row.double(8),
                    positionTime: row.optionalString(9), accuracy: row.isNull(10) ? nil : row.double(10),
                    distance: row.isNull(11) ? nil : row.double(11))
                if byDevice[device] == nil { order.append(device) }
                byDevice[device, default: []].append(event)
            }
            // No event after the mark: nothing moves (the mark stays at the newest folded).
            guard count > 0 else { return total }
            var devices = 0
            try connection.transaction {
                for device in order {
                    guard let (state, since) = try connection.query(
                        "SELECT state, journal_seq FROM device_state WHERE device = ?", [.text(device)], { ($0.bytes(0), $0.int64(1)) }).first
                    else { continue }
                    let later = byDevice[device]!.filter { $0.sequence > since }
                    guard let last = later.last, let folded = fold(state, later) else { continue }
                    try connection.run("UPDATE device_state SET state = ?, journal_seq = ? WHERE device = ?",
                                       [.blob(folded), .integer(last.sequence), .text(device)])
                    devices += 1
                }
                try connection.run("UPDATE state_fold SET seq = ?", [.integer(last)])
            }
            foldedJournalSequence = last
            statistics.folds += 1
            total.events += count
            total.devices += devices
            if count < batch { break }
        }
        return total
    }

    /// Queues a fold once ``foldEvery`` events wait for one: a transaction of ``foldBatch``
    /// events per job, queued again behind the commits while a whole batch waits.
    func queueFoldIfDue(continuing: Bool = false) {
        guard stateFold != nil, !foldQueued, unfoldedEvents >= (continuing ? Int64(Self.foldBatch) : Self.foldEvery) else { return }
        foldQueued = true
        perform { store in
            store.foldQueued = false
            // A failure (disk full, I/O) leaves the events for the next one: retention keeps them.
            guard (try? store.foldJournal(transactions: 1)) != nil else { return }
            store.queueFoldIfDue(continuing: true)
        }
    }
}
