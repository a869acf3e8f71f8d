/// Reads what ``StateWriter`` wrote; every read checks bounds.
struct StateReader {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset == bytes.count }

    mutating func byte() throws(MonitorStateError) -> UInt8 {
        guard offset < bytes.count else { throw MonitorStateError("truncated at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint() throws(MonitorStateError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw MonitorStateError("bad length at byte \(offset)") }
            value |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
        }
    }

    mutating func count() throws(MonitorStateError) -> Int {
        let v = try varint()
        guard v <= UInt64(bytes.count - offset) else { throw MonitorStateError("bad count \(v) at byte \(offset)") }
        return Int(v)
    }

    mutating func bool() throws(MonitorStateError) -> Bool {
        switch try byte() {
        case 0: return false
        case 1: return true
        default: throw MonitorStateError("bad flag at byte \(offset - 1)")
        }
    }

    mutating func fixed() throws(MonitorStateError) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<8 { v |= UInt64(try byte()) << UInt64(8 * i) }
        return v
    }

    mutating func double() throws(MonitorStateError) -> Double { Double(bitPattern: try fixed()) }

    mutating func optionalDouble() throws(MonitorStateError) -> Double? { try bool() ? try double() : nil }

    mutating func string() throws(MonitorStateError) -> String {
        let n = try count()
        let slice = bytes[offset..<offset + n]
        offset += n
        guard let s = String(validating: slice, as: UTF8.self) else {
            throw MonitorStateError("invalid UTF-8 at byte \(offset - n)")
        }
        return s
    }

    mutating func optionalString() throws(MonitorStateError) -> String? { try bool() ? try string() : nil }
}

/// Persisted monitor state that cannot be read back.
public struct MonitorStateError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "monitor state: \(message)" }
}
