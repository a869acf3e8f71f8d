import GeotriggerCore

/// The reply to a `track` query for several devices (docs/control-plane.md "Queries"), written
/// straight to bytes as it grows: `{"tracks": [{"device": ID, "positions": [{"lat", "lon",
/// "time"}, ...]} or {"device": ID, "unknown": true}, ...], "truncated": bool}`, never more than
/// ``budget`` bytes.
///
/// With ``partBytes`` it is split into parts like the `features` reply (each such an object with
/// `"part": I, "parts": K` after `truncated`, at most `partBytes` bytes unless one position alone
/// takes more, all of them within ``budget``), so that mosquitto's websockets listener sends
/// every part in one piece (docs/console.md). A device's positions may run on into the next
/// part: the part closes the device's entry and the next one opens it again with the same
/// `device`, so the entries read in order, those of one device joined, are the one-message
/// reply's.
struct TrackPartsWriter {
    /// The most bytes the finished reply may take, or all its parts together, each counted with
    /// its ``appended`` bytes.
    let budget: Int
    /// The most bytes a part may take (its ``appended`` bytes included); nil: one message.
    let partBytes: Int?
    /// The bytes the caller adds to every message after it is finished (the query's correlation).
    let appended: Int
    /// The room every message keeps for its end and ``appended``.
    private let tailRoom: Int
    /// The message (or the part) being written, without its end.
    private var bytes: [UInt8] = []
    /// The parts written before ``bytes``, each without its end.
    private var closed: [[UInt8]] = []
    /// The bytes ``closed`` will take, each counted with ``tailRoom``.
    private var closedBytes = 0
    /// The start of the entry being written (`{"device":ID,"positions":[`), to open it again in
    /// the next part; nil between entries.
    private var openEntry: [UInt8]?
    private var entriesInPart = 0
    private var positionsInEntry = 0
    /// The positions written so far.
    private(set) var positions = 0

    static let head = Array(#"{"tracks":["#.utf8)
    /// What closes an entry's positions.
    static let entryEnd = Array("]}".utf8)
    /// The shortest position a reply writes (`{"lat":0,"lon":0,"time":"1970-01-01T00:00:00Z"}`).
    static let shortestPosition = 47

    init(budget: Int = FeatureCollectionWriter.replyBudget, partBytes: Int? = nil, appended: Int = 0) {
        self.budget = budget
        self.partBytes = partBytes
        self.appended = appended
        // A part's end as FeatureCollectionWriter writes it: `part` and `parts` each as wide as
        // the budget written out.
        tailRoom = appended
            + (partBytes == nil
                ? ReplyRowsWriter.longestTail : FeatureCollectionWriter.partTail(truncated: false, part: budget, parts: budget).count)
        bytes = Self.head
    }

    /// The bytes of a part with nothing in it: the least `partBytes` that leaves room for a
    /// device.
    var emptyPartBytes: Int { Self.head.count + tailRoom }

    /// How many more positions could fit at most (by the shortest position): what to ask a
    /// device's track for, so that a long track is not copied only to be cut.
    var positionsThatMayFit: Int { max(0, budget - closedBytes - bytes.count - tailRoom) / Self.shortestPosition + 1 }

    /// Starts `device`'s entry; false, writing nothing, when even its empty entry does not fit.
    mutating func begin(device: String) -> Bool {
        precondition(openEntry == nil, "an entry is open")
        var entry = Array(#"{"device":"#.utf8)
        JSONValue.string(device).write(to: &entry)
        entry.append(contentsOf: #","positions":["#.utf8)
        guard place(entry, isPosition: false, opensEntry: true) else { return false }
        openEntry = entry
        return true
    }

    /// Writes `{"device": ID, "unknown": true}` for a device the gateway does not know; false,
    /// writing nothing, when it does not fit.
    mutating func unknown(device: String) -> Bool {
        precondition(openEntry == nil, "an entry is open")
        var entry = Array(#"{"device":"#.utf8)
        JSONValue.string(device).write(to: &entry)
        entry.append(contentsOf: #","unknown":true}"#.utf8)
        return place(entry, isPosition: false, opensEntry: false)
    }

    /// Appends a position to the open entry; false, writing nothing, when it would take the
    /// reply past the budget.
    mutating func append(_ position: RecentTrack.Position) -> Bool {
        precondition(openEntry != nil, "no entry is open")
        var row = Array(#"{"lat":"#.utf8)
        JSONValue.number(position.lat).write(to: &row)
        row.append(contentsOf: #","lon":"#.utf8)
        JSONValue.number(position.lon).write(to: &row)
        row.append(contentsOf: #","time":"#.utf8)
        JSONValue.string(ISO8601Time.format(position.time)).write(to: &row)
        row.append(UInt8(ascii: "}"))
        guard place(row, isPosition: true, opensEntry: true) else { return false }
        positions += 1
        return true
    }

    /// Ends the open entry (its room was kept when it began).
    mutating func end() {
        precondition(openEntry != nil, "no entry is open")
        bytes.append(contentsOf: Self.entryEnd)
        openEntry = nil
    }

    /// Writes `piece` (an entry, or a position of the open entry) where it fits: in this part,
    /// or, with ``partBytes``, at the start of the next one when this part holds something and
    /// would grow past `partBytes`. `opensEntry`: an entry is open after it (its end counted).
    private mutating func place(_ piece: [UInt8], isPosition: Bool, opensEntry: Bool) -> Bool {
        let comma = (isPosition ? positionsInEntry : entriesInPart) > 0 ? 1 : 0
        let closing = opensEntry ? Self.entryEnd.count : 0
        let size = bytes.count + comma + piece.count + closing + tailRoom
        if let partBytes, size > partBytes, entriesInPart > 0 {
            // The piece starts the next part (a position with its entry opened again there).
            let reopened = isPosition ? openEntry! : []
            let closedSize = bytes.count + (isPosition ? Self.entryEnd.count : 0) + tailRoom
            let nextSize = Self.head.count + reopened.count + piece.count + closing + tailRoom
            guard closedBytes + closedSize + nextSize <= budget else { return false }
            if isPosition { bytes.append(contentsOf: Self.entryEnd) }
            closed.append(bytes)
            closedBytes += closedSize
            bytes = Self.head + reopened + piece
            entriesInPart = 1
            positionsInEntry = isPosition ? 1 : 0
            return true
        }
        guard closedBytes + size <= budget else { return false }
        if comma > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: piece)
        if isPosition {
            positionsInEntry += 1
        } else {
            entriesInPart += 1
            positionsInEntry = 0
        }
        return true
    }

    /// The finished reply as messages, in order: one, or with ``partBytes`` the parts, each
    /// saying `truncated` (the same in all: devices or positions after the last listed were
    /// left out), `part` and `parts`.
    consuming func finishParts(truncated: Bool) -> [[UInt8]] {
        precondition(openEntry == nil, "an entry is open")
        guard partBytes != nil else {
            bytes.append(contentsOf: (truncated ? #"],"truncated":true}"# : #"],"truncated":false}"#).utf8)
            return [bytes]
        }
        return FeatureCollectionWriter.endParts(closed + [bytes], truncated: truncated)
    }
}
