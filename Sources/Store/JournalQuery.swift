internal import CSQLite

/// Which journal events to read: every filter given must match. Results come in commit order.
public struct JournalQuery: Sendable, Equatable {
    /// Only events whose fix time is at or after this (seconds since 1970).
    public var since: Double?
    /// Only events whose fix time is before this (seconds since 1970).
    public var until: Double?
    /// Only events of this device id.
    public var device: String?
    /// Only events of one of these device ids (nil: any).
    public var devices: [String]?
    /// Only events of one of these types (`enter`, `offRoute`, ...; nil: any).
    public var types: [String]?
    /// Only events of this trigger.
    public var trigger: String?
    /// Only events of this fence id (in any layer).
    public var fence: String?
    /// Only events after this journal sequence (to page through, or to follow the journal).
    public var afterSequence: Int64?
    /// At most this many events (the first ones in commit order); nil for all.
    public var limit: Int?

    public init(since: Double? = nil, until: Double? = nil, device: String? = nil, devices: [String]? = nil,
                types: [String]? = nil, trigger: String? = nil, fence: String? = nil,
                afterSequence: Int64? = nil, limit: Int? = nil) {
        self.since = since
        self.until = until
        self.device = device
        self.devices = devices
        self.types = types
        self.trigger = trigger
        self.fence = fence
        self.afterSequence = afterSequence
        self.limit = limit
    }
}
