/// Where the core gets IANA time zones by name. The core does no I/O: the gateway gives a source
/// that reads the system's tzdata (`/usr/share/zoneinfo/NAME`) and parses it with
/// ``TimeZoneRules/init(name:tzif:)``; tests may give their own.
public struct TimeZoneSource: Sendable {
    private let lookup: @Sendable (String) throws(TimeZoneError) -> TimeZoneRules

    /// `lookup` returns the rules of a zone name, or throws a ``TimeZoneError`` whose message
    /// says why it is unknown (it is shown after the key path of the `timezone` key).
    public init(_ lookup: @escaping @Sendable (String) throws(TimeZoneError) -> TimeZoneRules) {
        self.lookup = lookup
    }

    public func rules(named name: String) throws(TimeZoneError) -> TimeZoneRules {
        try lookup(name)
    }

    /// Knows `UTC` only (built in): for callers that have no tzdata to offer.
    public static let utcOnly = TimeZoneSource { name throws(TimeZoneError) in
        guard name == "UTC" else { throw TimeZoneError("unknown time zone \"\(name)\" (no time zone database here)") }
        return .utc
    }
}
