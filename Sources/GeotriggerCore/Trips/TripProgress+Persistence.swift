extension TripProgress {
    /// What a trip keeps across a restart (docs/trips.md "Restarts"): a few fields, encoded in
    /// about 20 bytes.
    ///
    /// `state`, `started`, `late` and `overspeed` change only with an event, and are committed
    /// with it (in the event's transaction): they are committed at state changes only. `along`
    /// changes between events; it is committed with each event and otherwise at most once a
    /// minute of fix time (the gateway's choice), kept in memory between: a restart resumes
    /// from the last committed `along`, searching forward from it. Speeds (the ETA's history)
    /// are not kept: after a restart there is no ETA until the device has moved again. Nor is a
    /// running hold, of the corridor (`holdStart`, always committed as none) or of the speed
    /// (``SpeedWatch``): after a restart it begins afresh at the next fix, so an `offRoute`,
    /// `backOnRoute`, `overspeed` or `speedOk` under way comes up to its hold's time later,
    /// once; `overspeed` itself is kept, so a restart mid-overspeed repeats no `overspeed` and
    /// still gives the `speedOk`.
    public struct Committed: Sendable, Equatable {
        public var state: TripState
        public var along: Double
        public var started: Bool
        public var late: Bool
        public var holdStart: Double?
        /// Between `overspeed` and `speedOk`.
        public var overspeed: Bool

        public init(state: TripState, along: Double, started: Bool, late: Bool, holdStart: Double?, overspeed: Bool = false) {
            self.state = state
            self.along = along
            self.started = started
            self.late = late
            self.holdStart = holdStart
            self.overspeed = overspeed
        }

        /// Version 2 of the encoding (version 1, read too, had no `overspeed`: false).
        static let magic: [UInt8] = Array("GTT2".utf8)
        static let magicVersion1: [UInt8] = Array("GTT1".utf8)

        /// The fields as bytes; equal values give equal bytes.
        public func encoded() -> [UInt8] {
            var w = StateWriter()
            for b in Committed.magic { w.write(UInt64(b)) }
            w.write(TripState.allCases.firstIndex(of: state)!)
            w.write(along)
            w.write(started)
            w.write(late)
            w.write(holdStart)
            w.write(overspeed)
            return w.bytes
        }

        /// Reads ``encoded()`` bytes back.
        public init(decoding bytes: [UInt8]) throws(TripStateError) {
            do throws(MonitorStateError) {
                var r = StateReader(bytes)
                var magic: [UInt64] = []
                for _ in Committed.magic { magic.append(try r.varint()) }
                let version2 = magic == Committed.magic.map(UInt64.init)
                guard version2 || magic == Committed.magicVersion1.map(UInt64.init) else {
                    throw MonitorStateError("not a geotrigger trip state (version 1 or 2)")
                }
                let stateIndex = try r.varint()
                guard stateIndex < UInt64(TripState.allCases.count) else {
                    throw MonitorStateError("unknown state \(stateIndex)")
                }
                state = TripState.allCases[Int(stateIndex)]
                along = try r.double()
                guard along.isFinite, along >= 0 else { throw MonitorStateError("along \(along) is not a distance") }
                started = try r.bool()
                late = try r.bool()
                holdStart = try r.optionalDouble()
                overspeed = version2 ? try r.bool() : false
                guard r.atEnd else { throw MonitorStateError("\(bytes.count - r.offset) bytes left over") }
            } catch {
                throw TripStateError(error.message)
            }
        }
    }

    /// The fields to commit now (see ``Committed``).
    public var committed: Committed {
        Committed(state: state, along: along, started: started, late: late, holdStart: nil, overspeed: isOverspeed)
    }
}

/// A committed trip state that cannot be read back.
public struct TripStateError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "trip state: \(message)" }
}
