/// A device's recent track, kept in memory for the console's `track` query (docs/console.md):
/// its accepted positions, at most one per ``spacing`` seconds of fix time and only where it
/// moved beyond the fix's accuracy (a parked device adds nothing), for the last ``window``
/// seconds. Compact: positions are packed into chunks of deltas, 6 bytes a position (fix time
/// in tenths of a second, latitude and longitude in millionths of a degree, about 0.11 m; 18
/// bytes after a jump of more than 3 km), so a device reporting every 10 s for a day holds
/// about 57 KB.
///
/// A value: its owner (the device's shard) keeps it beside the monitor and under the same lock.
public struct RecentTrack: Sendable {
    /// A kept position.
    public struct Position: Sendable, Equatable {
        public var lat: Double
        public var lon: Double
        /// Fix time (Unix seconds, to a tenth).
        public var time: Double

        public init(lat: Double, lon: Double, time: Double) {
            self.lat = lat
            self.lon = lon
            self.time = time
        }
    }

    /// One position in 10 s of fix time at most.
    public static let spacing = 10.0
    /// The last 24 hours of fix time.
    public static let window = 86_400.0
    /// Positions per chunk: the unit in which old positions leave memory.
    static let chunkCapacity = 256
    /// Bytes of one packed position.
    static let recordSize = 6

    /// A run of positions: the first whole, the others as deltas from the one before.
    struct Chunk: Sendable {
        /// The first position (tenths of a second; millionths of a degree).
        var first: (time: Int64, lat: Int32, lon: Int32)
        /// The last position, which the next delta is taken from.
        var last: (time: Int64, lat: Int32, lon: Int32)
        var count = 1
        /// Deltas: UInt16 time, Int16 latitude, Int16 longitude, little-endian.
        var deltas: [UInt8] = []

        init(_ position: (time: Int64, lat: Int32, lon: Int32)) {
            first = position
            last = position
        }

        /// Appends `position` as a delta (6 bytes), or after a jump of more than 3 km or a gap
        /// of more than 6,553 s as a marker and the whole position (18 bytes); false when the
        /// chunk is full (or the step goes back in time).
        mutating func append(_ position: (time: Int64, lat: Int32, lon: Int32)) -> Bool {
            let dt = position.time - last.time, dlat = Int64(position.lat) - Int64(last.lat), dlon = Int64(position.lon) - Int64(last.lon)
            guard count < RecentTrack.chunkCapacity, dt >= 0, dt <= Int64(Int32.max) else { return false }
            if deltas.isEmpty { deltas.reserveCapacity(RecentTrack.chunkCapacity * RecentTrack.recordSize) }
            func put(_ value: UInt16) {
                deltas.append(UInt8(truncatingIfNeeded: value))
                deltas.append(UInt8(truncatingIfNeeded: value >> 8))
            }
            func put32(_ value: Int32) {
                put(UInt16(truncatingIfNeeded: UInt32(bitPattern: value)))
                put(UInt16(truncatingIfNeeded: UInt32(bitPattern: value) >> 16))
            }
            if dt < Int64(Self.marker), (Int64(Int16.min)...Int64(Int16.max)).contains(dlat), (Int64(Int16.min)...Int64(Int16.max)).contains(dlon) {
                put(UInt16(dt))
                put(UInt16(bitPattern: Int16(dlat)))
                put(UInt16(bitPattern: Int16(dlon)))
            } else {
                put(Self.marker)
                put(0)
                put(0)
                put32(Int32(dt))
                put32(position.lat)
                put32(position.lon)
            }
            last = position
            count += 1
            // A full chunk whose jumps outgrew the room reserved gives back what doubling added.
            if count == RecentTrack.chunkCapacity, deltas.capacity > deltas.count + 256 {
                deltas = deltas.withUnsafeBufferPointer { Array($0) }
            }
            return true
        }

        /// The time delta that marks a whole position after it.
        static let marker = UInt16.max

        /// Every position, oldest first.
        func forEach(_ body: (Position) -> Void) {
            var (time, lat, lon) = first
            body(RecentTrack.position(time, lat, lon))
            var i = 0
            func word(_ at: Int) -> UInt16 { UInt16(deltas[at]) | UInt16(deltas[at + 1]) << 8 }
            func word32(_ at: Int) -> Int32 { Int32(bitPattern: UInt32(word(at)) | UInt32(word(at + 2)) << 16) }
            while i < deltas.count {
                if word(i) == Self.marker {
                    time += Int64(word32(i + 6))
                    lat = word32(i + 10)
                    lon = word32(i + 14)
                    i += 18
                } else {
                    time += Int64(word(i))
                    lat = lat &+ Int32(Int16(bitPattern: word(i + 2)))
                    lon = lon &+ Int32(Int16(bitPattern: word(i + 4)))
                    i += RecentTrack.recordSize
                }
                body(RecentTrack.position(time, lat, lon))
            }
        }

        /// Bytes held (the deltas' capacity and the chunk's own fields).
        var bytes: Int { deltas.capacity + MemoryLayout<Chunk>.stride }
    }

    private(set) var chunks: [Chunk] = []
    /// The last kept position in degrees and its fix time, for the spacing and the move.
    private var lastKept: (coordinate: Coordinate, time: Double)?

    public init() {}

    /// Positions held.
    public var count: Int { chunks.reduce(0) { $0 + $1.count } }

    /// Bytes held, for the store's budget.
    public var bytes: Int { chunks.reduce(0) { $0 + $1.bytes } + chunks.capacity * MemoryLayout<Chunk>.stride }

    /// The fix time of the oldest position held (nil: none).
    public var oldestTime: Double? { chunks.first.map { Double($0.first.time) / 10 } }

    /// Keeps an accepted fix if it is at least ``spacing`` after the last kept one and moved
    /// farther from it than `accuracy` (metres; nil: any move); returns whether it was kept.
    /// A fix older than the last kept one is not kept (the track stays in fix-time order).
    @discardableResult
    public mutating func record(_ coordinate: Coordinate, time: Double, accuracy: Double?) -> Bool {
        if let lastKept {
            guard time >= lastKept.time + Self.spacing else { return false }
            guard Earth.distance(lastKept.coordinate, coordinate) > (accuracy ?? 0) else { return false }
        }
        lastKept = (coordinate, time)
        let packed = (time: Int64((time * 10).rounded()), lat: Int32((coordinate.lat * 1e6).rounded()), lon: Int32((coordinate.lon * 1e6).rounded()))
        if chunks.isEmpty || !chunks[chunks.count - 1].append(packed) { chunks.append(Chunk(packed)) }
        return true
    }

    /// Drops the chunks whose every position is older than `now - window` (fix time); returns
    /// the bytes freed. A chunk that reaches into the window stays whole (a query filters by time).
    @discardableResult
    public mutating func expire(now: Double) -> Int {
        let cutoff = Int64(((now - Self.window) * 10).rounded())
        var freed = 0
        var drop = 0
        while drop < chunks.count, chunks[drop].last.time < cutoff {
            freed += chunks[drop].bytes
            drop += 1
        }
        if drop > 0 { chunks.removeFirst(drop) }
        if chunks.isEmpty { lastKept = nil }
        return freed
    }

    /// Drops the oldest chunk (the store over its budget); returns the bytes freed.
    @discardableResult
    public mutating func dropOldestChunk() -> Int {
        guard !chunks.isEmpty else { return 0 }
        let freed = chunks.removeFirst().bytes
        if chunks.isEmpty { lastKept = nil }
        return freed
    }

    /// The positions with fix times from `since` on, oldest first, skipping the first `offset`
    /// of them, at most `limit`; and whether more follow.
    public func positions(since: Double, offset: Int = 0, limit: Int = .max) -> (positions: [Position], more: Bool) {
        let from = Int64((since * 10).rounded(.down))
        var out: [Position] = []
        var skipped = 0
        var more = false
        for chunk in chunks where chunk.last.time >= from {
            if more { break }
            chunk.forEach { position in
                guard !more, position.time * 10 >= Double(from) - 0.5 else { return }
                if skipped < offset {
                    skipped += 1
                } else if out.count < limit {
                    out.append(position)
                } else {
                    more = true
                }
            }
        }
        return (out, more)
    }

    static func position(_ time: Int64, _ lat: Int32, _ lon: Int32) -> Position {
        Position(lat: Double(lat) / 1e6, lon: Double(lon) / 1e6, time: Double(time) / 10)
    }
}
