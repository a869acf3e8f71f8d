/// ISO-8601 / RFC 3339 timestamps without Foundation, for payload times.
public enum ISO8601Time {
    /// The times that have an ISO-8601 text with a four-digit year, in seconds since 1970:
    /// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.
    public static let supportedRange: ClosedRange<Double> = -62_135_596_800...253_402_300_799.999

    /// Seconds since 1970 for `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)`
    /// (a space is accepted for `T`, and a missing zone means UTC); nil if it is not one.
    public static func parse(_ text: some StringProtocol) -> Double? {
        let b = Array(text.utf8)
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= b.count else { return nil }
            var v = 0
            for k in i..<(i + n) {
                let d = Int(b[k]) - 48
                guard d >= 0, d <= 9 else { return nil }
                v = v * 10 + d
            }
            i += n
            return v
        }
        func expect(_ c: Character) -> Bool {
            guard i < b.count, b[i] == c.asciiValue! else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
            i < b.count, b[i] == UInt8(ascii: "T") || b[i] == UInt8(ascii: "t") || b[i] == UInt8(ascii: " ")
        else { return nil }
        i += 1
        guard let hour = digits(2), expect(":"), let minute = digits(2), expect(":"), let second = digits(2),
            (1...12).contains(month), day >= 1, day <= CivilDate.daysInMonth(year: year, month: month), hour < 24, minute < 60,
            second <= 60
        else { return nil }
        var fraction = 0.0
        if i < b.count, b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: ",") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                fraction += Double(b[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset = 0
        if i < b.count {
            switch b[i] {
            case UInt8(ascii: "Z"), UInt8(ascii: "z"): i += 1
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let h = digits(2) else { return nil }
                _ = expect(":")
                guard let m = digits(2), h < 24, m < 60 else { return nil }
                offset = sign * (h * 3600 + m * 60)
            default: return nil
            }
        }
        guard i == b.count else { return nil }
        let days = CivilDate.days(year: year, month: month, day: day)
        return Double(days * 86400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }

    /// ISO-8601 UTC text for `seconds` since 1970: `2026-11-30T12:00:00Z`, with milliseconds
    /// (`2026-11-30T12:00:00.120Z`) when the time is not a whole second or `milliseconds` is set.
    /// Times are rounded to the millisecond. A time outside ``supportedRange`` is written as the
    /// nearer end of it (not a number: as 1970), so formatting never traps; inputs are checked
    /// against the range where they are read (payloads, tracks), so no such time gets here.
    public static func format(_ seconds: Double, milliseconds: Bool = false) -> String {
        // Written into the string's own storage: every event and device state carries two to
        // four of these, and building them from padded pieces allocated a dozen strings each.
        String(unsafeUninitializedCapacity: maximumLength) { write(seconds, milliseconds: milliseconds, to: $0) }
    }

    /// Appends the text of ``format(_:milliseconds:)`` to `out` as UTF-8, without a `String`
    /// (a trip's progress payload is built as bytes, docs/performance.md "Trips").
    public static func append(_ seconds: Double, milliseconds: Bool = false, to out: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maximumLength) { buffer in
            let count = write(seconds, milliseconds: milliseconds, to: buffer)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// The longest text ``write(_:milliseconds:to:)`` writes (`-YYYY-MM-DDTHH:MM:SS.mmmZ` is 25).
    static let maximumLength = 40

    /// Writes the text of ``format(_:milliseconds:)`` at the start of `out` (at least
    /// ``maximumLength`` bytes) and returns its length.
    private static func write(_ seconds: Double, milliseconds: Bool, to out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        let clamped = seconds.isNaN ? 0 : Swift.min(Swift.max(seconds, supportedRange.lowerBound), supportedRange.upperBound)
        let total = Int64((clamped * 1000).rounded())
        var days = total / 86_400_000
        var msOfDay = total % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (y, m, d) = CivilDate.civil(days: Int(days))
        let second = Int(msOfDay / 1000), ms = Int(msOfDay % 1000)
        var i = 0
        func put(_ byte: UInt8) {
            out[i] = byte
            i += 1
        }
        func put(_ value: Int, width: Int) {
            var count = 1
            var rest = value
            while rest >= 10 {
                rest /= 10
                count += 1
            }
            count = max(count, width)
            rest = value
            for k in stride(from: i + count - 1, through: i, by: -1) {
                out[k] = UInt8(truncatingIfNeeded: 48 + rest % 10)
                rest /= 10
            }
            i += count
        }
        if y < 0 { put(UInt8(ascii: "-")) }
        put(abs(y), width: 4)
        put(UInt8(ascii: "-"))
        put(m, width: 2)
        put(UInt8(ascii: "-"))
        put(d, width: 2)
        put(UInt8(ascii: "T"))
        put(second / 3600, width: 2)
        put(UInt8(ascii: ":"))
        put(second / 60 % 60, width: 2)
        put(UInt8(ascii: ":"))
        put(second % 60, width: 2)
        if milliseconds || ms != 0 {
            put(UInt8(ascii: "."))
            put(ms, width: 3)
        }
        put(UInt8(ascii: "Z"))
        return i
    }
}
