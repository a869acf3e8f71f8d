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

extension DeviceID {
    /// How ``made(from:fallback:)`` makes a name into a device id, for messages and `--help`.
    public static let madeRule =
        "'+', '#', control characters, empty levels and a leading '$' are dropped from a track name"

    /// A valid device id from a track's name (Garmin's `ACTIVE LOG #2` becomes `ACTIVE LOG 2`):
    /// `+`, `#` and control characters dropped, runs of spaces made one and trimmed, empty levels
    /// (`a//b`, a leading or trailing `/`) and leading `$` dropped, cut to ``maxLength`` bytes at
    /// a character; `fallback` if nothing is left. A valid id is returned as it is.
    public static func made(from name: String, fallback: String) -> String {
        if problem(with: name) == nil { return name }
        var kept = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            let v = scalar.value
            if v == 0x2B || v == 0x23 || v < 0x20 || (0x7F...0x9F).contains(v) { continue }
            if scalar == " ", kept.last == " " || kept.isEmpty { continue }
            kept.append(scalar)
        }
        var levels = String(kept).split(separator: "/", omittingEmptySubsequences: true)
            .map { $0.trimmingCharacters(in: " ") }
            .filter { !$0.isEmpty }
        while let first = levels.first, first.hasPrefix("$") {
            let rest = String(first.drop { $0 == "$" })
            if rest.isEmpty { levels.removeFirst() } else { levels[0] = rest }
        }
        var id = levels.joined(separator: "/")
        while id.utf8.count > maxLength { id.removeLast() }
        while id.hasSuffix("/") || id.hasSuffix(" ") { id.removeLast() }
        return id.isEmpty || problem(with: id) != nil ? fallback : id
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        var s = self
        while s.first == character { s.removeFirst() }
        while s.last == character { s.removeLast() }
        return String(s)
    }
}
