/// One IANA time zone as a TZif file describes it (RFC 8536): the UTC offset in effect at any
/// instant. Read from the file's bytes (the core does no I/O: the gateway reads
/// `/usr/share/zoneinfo/NAME`).
///
/// Version 1 files use their 32-bit data; version 2 and later files their 64-bit data, and the
/// footer's POSIX TZ string (``POSIXTimeZoneRule``) for instants after the last transition.
/// Before the first transition the first local time type applies. Leap second records are
/// skipped: the `right/` zones count leap seconds in their transition times and are not meant
/// for this.
public struct TimeZoneRules: Sendable, Equatable {
    /// The IANA name it was read as (`Australia/Melbourne`).
    public let name: String
    /// Transition instants, seconds since 1970-01-01T00:00:00Z, ascending.
    let transitions: [Int64]
    /// `offsets[transitionTypes[i]]` applies from `transitions[i]`.
    let transitionTypes: [UInt8]
    /// Per local time type: seconds east of UTC.
    let offsets: [Int32]
    /// The footer's rule (version 2+, when not empty).
    let footer: POSIXTimeZoneRule?

    /// UTC itself, without any file (the default zone of a schedule).
    public static let utc = TimeZoneRules(name: "UTC", transitions: [], transitionTypes: [], offsets: [0], footer: nil)

    init(name: String, transitions: [Int64], transitionTypes: [UInt8], offsets: [Int32], footer: POSIXTimeZoneRule?) {
        self.name = name
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.offsets = offsets
        self.footer = footer
    }

    /// Reads a TZif file; throws for anything that is not a well-formed one.
    public init(name: String, tzif bytes: [UInt8]) throws(TimeZoneError) {
        self.name = name
        func bad(_ what: String) -> TimeZoneError { TimeZoneError("not a valid TZif file: \(what)") }
        guard bytes.count >= 44, bytes[0] == 0x54, bytes[1] == 0x5A, bytes[2] == 0x69, bytes[3] == 0x66 else {
            throw bad("no \"TZif\" header")
        }
        let version = bytes[4]
        guard version == 0 || version >= UInt8(ascii: "2") else { throw bad("unknown version \(version)") }
        var reader = Reader(bytes: bytes)
        var header = try reader.header()
        guard header.typeCount >= 1 else { throw bad("no local time type") }
        var timeSize = 4
        if version != 0 {
            // Skip the version 1 data block; the second header and block hold 64-bit times.
            try reader.skip(header.blockLength(timeSize: 4))
            guard reader.remaining >= 44, reader.matchesMagic() else { throw bad("no second header") }
            header = try reader.header()
            guard header.typeCount >= 1 else { throw bad("no local time type") }
            timeSize = 8
        }
        guard reader.remaining >= header.blockLength(timeSize: timeSize) else { throw bad("truncated data") }
        var times: [Int64] = []
        times.reserveCapacity(header.timeCount)
        for _ in 0..<header.timeCount {
            let t = timeSize == 8 ? reader.int64() : Int64(reader.int32())
            if let last = times.last, t <= last { throw bad("transition times are not ascending") }
            times.append(t)
        }
        var types: [UInt8] = []
        types.reserveCapacity(header.timeCount)
        for _ in 0..<header.timeCount {
            let t = reader.byte()
            guard Int(t) < header.typeCount else { throw bad("a transition names local time type \(t) of \(header.typeCount)") }
            types.append(t)
        }
        var offsets: [Int32] = []
        for _ in 0..<header.typeCount {
            let utoff = reader.int32()
            _ = reader.byte()  // isdst
            _ = reader.byte()  // abbreviation index
            guard utoff > -26 * 3600, utoff < 26 * 3600 else { throw bad("UTC offset \(utoff) s is out of range") }
            offsets.append(utoff)
        }
        try reader.skip(header.characterCount + header.leapCount * (timeSize + 4) + header.standardCount + header.utCount)
        var footer: POSIXTimeZoneRule?
        if version != 0 {
            guard reader.remaining >= 2, reader.byte() == 0x0A else { throw bad("no footer") }
            var text: [UInt8] = []
            while true {
                guard reader.remaining > 0 else { throw bad("unterminated footer") }
                let c = reader.byte()
                if c == 0x0A { break }
                text.append(c)
            }
            if !text.isEmpty {
                guard let string = String(validating: text, as: UTF8.self) else { throw bad("footer is not text") }
                do throws(TimeZoneError) {
                    footer = try POSIXTimeZoneRule(string)
                } catch {
                    throw bad(error.message)
                }
            }
        }
        self.transitions = times
        self.transitionTypes = types
        self.offsets = offsets
        self.footer = footer
    }

    /// The offset from UTC in seconds east (`36000` for AEST) in effect at `time`, epoch seconds.
    public func offset(at time: Double) -> Int {
        offset(atSeconds: CivilDate.clampedSeconds(time))
    }

    /// ``offset(at:)`` for whole seconds.
    public func offset(atSeconds seconds: Int) -> Int {
        let t = Int64(seconds)
        guard let last = transitions.last else {
            return footer?.offset(at: seconds) ?? Int(offsets[0])
        }
        if t > last, let footer { return footer.offset(at: seconds) }
        if t < transitions[0] { return Int(offsets[0]) }
        // The last transition at or before t.
        var low = 0, high = transitions.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if transitions[mid] <= t { low = mid } else { high = mid - 1 }
        }
        return Int(offsets[Int(transitionTypes[low])])
    }

    /// The counts of a TZif header.
    private struct Header {
        var utCount: Int, standardCount: Int, leapCount: Int, timeCount: Int, typeCount: Int, characterCount: Int

        func blockLength(timeSize: Int) -> Int {
            timeCount * timeSize + timeCount + typeCount * 6 + characterCount + leapCount * (timeSize + 4)
                + standardCount + utCount
        }
    }

    /// A bounds-checked big-endian cursor (callers check ``remaining`` before the fixed reads).
    private struct Reader {
        let bytes: [UInt8]
        var i = 0

        var remaining: Int { bytes.count - i }

        func matchesMagic() -> Bool {
            bytes[i] == 0x54 && bytes[i + 1] == 0x5A && bytes[i + 2] == 0x69 && bytes[i + 3] == 0x66
        }

        mutating func header() throws(TimeZoneError) -> Header {
            guard remaining >= 44 else { throw TimeZoneError("not a valid TZif file: truncated header") }
            i += 20
            var counts: [Int] = []
            for _ in 0..<6 { counts.append(Int(UInt32(bitPattern: int32()))) }
            // Every count fits in 32 bits, so lengths computed from them cannot overflow an Int.
            let header = Header(
                utCount: counts[0], standardCount: counts[1], leapCount: counts[2], timeCount: counts[3],
                typeCount: counts[4], characterCount: counts[5])
            guard header.typeCount <= 256, header.utCount == 0 || header.utCount == header.typeCount,
                header.standardCount == 0 || header.standardCount == header.typeCount
            else { throw TimeZoneError("not a valid TZif file: inconsistent counts") }
            return header
        }

        mutating func skip(_ n: Int) throws(TimeZoneError) {
            guard n >= 0, n <= remaining else { throw TimeZoneError("not a valid TZif file: truncated data") }
            i += n
        }

        mutating func byte() -> UInt8 {
            defer { i += 1 }
            return bytes[i]
        }

        mutating func int32() -> Int32 {
            var v: UInt32 = 0
            for _ in 0..<4 { v = v << 8 | UInt32(byte()) }
            return Int32(bitPattern: v)
        }

        mutating func int64() -> Int64 {
            var v: UInt64 = 0
            for _ in 0..<8 { v = v << 8 | UInt64(byte()) }
            return Int64(bitPattern: v)
        }
    }
}
