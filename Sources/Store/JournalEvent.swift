internal import CSQLite

/// One event as the journal keeps it: the event JSON exactly as published on MQTT (`payload`),
/// its id and times, and the fields it is queried by.
///
/// The journal stores only id, times and payload: device, trigger, layer, fence and type are
/// read back from the payload (`device`, `trigger`, `fence.layer`, `fence.id`, `type`, as the
/// MQTT event schema has them), so they must agree with it.
public struct JournalEvent: Sendable, Equatable {
    /// The event's deterministic id (unique in the journal).
    public var id: String
    public var device: String
    public var trigger: String
    /// The fence layer name.
    public var layer: String
    /// The fence id within its layer.
    public var fence: String
    /// `enter`, `exit` or `dwell`.
    public var type: String
    /// The fix time that decided the event, in seconds since 1970 (UTC).
    public var fixTime: Double
    /// When the gateway emitted the event, in seconds since 1970 (UTC); retention counts by it.
    public var emittedTime: Double
    /// The event JSON (the MQTT event schema), one line.
    public var payload: String

    public init(id: String, device: String, trigger: String, layer: String, fence: String, type: String,
                fixTime: Double, emittedTime: Double, payload: String) {
        self.id = id
        self.device = device
        self.trigger = trigger
        self.layer = layer
        self.fence = fence
        self.type = type
        self.fixTime = fixTime
        self.emittedTime = emittedTime
        self.payload = payload
    }
}
