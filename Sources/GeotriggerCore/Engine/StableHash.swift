/// A 128-bit hash that is the same in every process, on every machine, in every release: ids in
/// events and keys in persisted state are derived from it. (Swift's `Hasher` is seeded per
/// process and cannot be used.)
///
/// Two FNV-1a 64 lanes with different offsets and primes, each finished with MurmurHash3's
/// `fmix64` and mixed with the other. Fields are separated by the byte 0xFF, which never occurs
/// in UTF-8, so no two different field lists give the same byte stream.
public struct StableHash {
    private var high: UInt64 = 0xcbf2_9ce4_8422_2325
    private var low: UInt64 = 0x6c62_272e_07bb_0142

    public init() {}

    public mutating func combine(_ text: String) {
        for byte in text.utf8 { add(byte) }
        add(0xFF)
    }

    mutating func combine(_ value: Int64) {
        var v = UInt64(bitPattern: value)
        for _ in 0..<8 {
            add(UInt8(truncatingIfNeeded: v))
            v >>= 8
        }
        add(0xFF)
    }

    @inline(__always)
    private mutating func add(_ byte: UInt8) {
        high = (high ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        low = (low ^ UInt64(byte)) &* 0x9E37_79B9_7F4A_7C15
    }

    private static func mix(_ value: UInt64) -> UInt64 {
        var k = value
        k ^= k >> 33
        k = k &* 0xff51_afd7_ed55_8ccd
        k ^= k >> 33
        k = k &* 0xc4ce_b9fe_1a85_ec53
        k ^= k >> 33
        return k
    }

    /// The two 64-bit halves.
    public func finish() -> (UInt64, UInt64) {
        let a = StableHash.mix(high ^ (low >> 1))
        let b = StableHash.mix(low ^ a)
        return (a, b)
    }

    /// The first 64 bits of the hash of one string (for sharding and other stable numbers).
    public static func of(_ text: String) -> UInt64 {
        var h = StableHash()
        h.combine(text)
        return h.finish().0
    }

    /// 32 lowercase hex digits.
    func hex() -> String {
        let (a, b) = finish()
        return String(unsafeUninitializedCapacity: 32) { out in
            StableHash.writeHex(a, to: out, at: 0)
            StableHash.writeHex(b, to: out, at: 16)
            return 32
        }
    }

    /// Writes the 16 hex digits of `value` at `out[start...]` (every event id is two of them:
    /// written in place, one allocation instead of five).
    private static func writeHex(_ value: UInt64, to out: UnsafeMutableBufferPointer<UInt8>, at start: Int) {
        var v = value
        for i in stride(from: start + 15, through: start, by: -1) {
            let nibble = UInt8(truncatingIfNeeded: v & 0xF)
            out[i] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
            v >>= 4
        }
    }

    /// The persisted key of a (trigger, layer) pair.
    static func watchKey(trigger: String, layer: String) -> UInt64 {
        var h = StableHash()
        h.combine("watch")
        h.combine(trigger)
        h.combine(layer)
        return h.finish().0
    }

    /// A fix time as whole milliseconds (what ids are derived from, so a time that went through
    /// text and back keeps its id).
    static func milliseconds(_ time: Double) -> Int64 {
        let ms = (time * 1000).rounded()
        guard ms.isFinite, abs(ms) < 9e18 else { return 0 }
        return Int64(ms)
    }
}

/// Deterministic event ids (docs/topics-and-payloads.md "Events": `id`).
public enum EventID {
    /// The id of the event of `type` (`enter`, `exit`, `dwell`, or `baseline` for a silent
    /// baseline's visit id) for (trigger, layer, fence, device) decided by the update with fix
    /// time `time` (seconds; whole milliseconds count). 32 lowercase hex digits.
    public static func make(
        trigger: String, layer: String, fence: String, device: String, type: String, time: Double
    ) -> String {
        var h = StableHash()
        h.combine("geotrigger-event-1")
        h.combine(trigger)
        h.combine(layer)
        h.combine(fence)
        h.combine(device)
        h.combine(type)
        h.combine(StableHash.milliseconds(time))
        return h.hex()
    }
}
