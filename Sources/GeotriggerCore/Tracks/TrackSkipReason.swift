/// Why a track reader passed over a record without stopping the read. Only NMEA logs have such
/// records (a receiver logs sentences before it has a fix, and a serial line garbles some); a
/// bad record in the other formats is an error naming its line.
///
/// Sentences that are not about position (GSV, GSA, TXT, ...) are not skipped: they are simply
/// not read. A sentence whose checksum fails is counted whatever its type, as its type cannot
/// be trusted either.
public enum TrackSkipReason: String, Sendable, Hashable, CaseIterable, Comparable {
    /// No `*HH` checksum at the end of the sentence.
    case noChecksum = "no checksum"
    /// A `*HH` checksum that is not the XOR of the sentence.
    case wrongChecksum = "wrong checksum"
    /// An RMC or GGA sentence with fewer fields than its time, date and position need.
    case tooFewFields = "too few fields"
    /// RMC status other than `A`, or GGA fix quality 0 or empty: the receiver had no fix.
    case noFix = "no fix"
    /// A time field that is not a number (empty, letters).
    case unreadableTime = "unreadable time"
    /// A time field that is a number but no time of day `hhmmss[.sss]` (hour 25, `123456.1e30`).
    case timeOutOfRange = "time out of range"
    /// A date field that is not a number.
    case unreadableDate = "unreadable date"
    /// A date field that is a number but no calendar date `ddmmyy` (31 November, month 13).
    case dateOutOfRange = "date out of range"
    /// A latitude or longitude that is not a number, or a hemisphere other than N, S, E, W.
    case unreadablePosition = "unreadable position"
    /// A latitude beyond 90 or longitude beyond 180 degrees, or minutes of 60 or more.
    case positionOutOfRange = "position out of range"

    /// The kind of record skipped, singular: `NMEA sentence`.
    public var record: String { "NMEA sentence" }

    /// `1 NMEA sentence: time out of range`, `2 NMEA sentences: no fix`.
    public func summary(count: Int) -> String {
        "\(count) \(record)\(count == 1 ? "" : "s"): \(rawValue)"
    }

    /// In declaration order: the sentence's frame first, then its fields in the order read.
    public static func < (a: TrackSkipReason, b: TrackSkipReason) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
