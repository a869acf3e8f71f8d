/// Why a time zone could not be read: an unknown name, or a TZif file or POSIX TZ string that
/// does not follow RFC 8536. ``message`` is written for the person who named the zone.
public struct TimeZoneError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
