/// Rules for device ids: they become MQTT topic levels in every output topic.
public enum DeviceID {
    /// The longest device id accepted, in UTF-8 bytes.
    public static let maxLength = 200

    /// Nil if `id` is a usable device id, else why not (counted as `badDeviceId`): it must be
    /// non-empty, at most ``maxLength`` bytes, without empty levels (`a//b`), wildcards
    /// (`+`, `#`), control characters or a leading `$`.
    public static func problem(with id: String) -> String? {
        if id.isEmpty { return "the device id is empty" }
        if id.utf8.count > maxLength { return "the device id is longer than \(maxLength) bytes" }
        // The byte test first: it is cheap, and only an id whose first byte is `$` can have a
        // first Character equal to "$" (`hasPrefix` compares Characters: "$\u{301}x" has not).
        if id.utf8.first == UInt8(ascii: "$"), id.hasPrefix("$") { return "a device id cannot start with '$'" }
        var previous: UInt8 = UInt8(ascii: "/")
        for byte in id.utf8 {
            if byte < 0x20 || byte == 0x7F { return "the device id contains a control character" }
            if byte == UInt8(ascii: "+") || byte == UInt8(ascii: "#") {
                return "the device id contains a wildcard ('+' or '#')"
            }
            if byte == UInt8(ascii: "/"), previous == UInt8(ascii: "/") {
                return "the device id has an empty level"
            }
            previous = byte
        }
        if previous == UInt8(ascii: "/") { return "the device id has an empty level" }
        return nil
    }
}
