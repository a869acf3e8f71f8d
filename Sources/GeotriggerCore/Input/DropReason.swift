/// Why an update was dropped; the raw values are the counter names of the status topic
/// (docs/topics-and-payloads.md "Inputs").
public enum DropReason: String, Sendable, CaseIterable, Hashable {
    case notJSON, invalidUTF8, oversize, missingField, wrongType, notFinite, outOfRange, futureTime
    case badDeviceId, ignoredType, outOfOrder, duplicate, filtered, ownEcho, tooManyDevices
}

/// A dropped input: the reason counted, and a detail for the (rate-limited) log line.
public struct InputDrop: Error, Sendable, Equatable {
    public var reason: DropReason
    public var detail: String

    public init(_ reason: DropReason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }
}
