/// ISO-8601 UTC text for times in seconds since 1970 (proleptic Gregorian calendar), without
/// Foundation: `2026-11-30T12:00:00Z`, or with milliseconds `2026-11-30T12:00:00.120Z`.
public enum Timestamp {
    /// `seconds` as ISO-8601 UTC. `milliseconds`: always three fraction digits; otherwise they
    /// are written only when the time is not a whole second.
    public static func iso8601(_ seconds: Double, milliseconds: Bool = false) -> String {
        let totalMs = StableHash.milliseconds(seconds)
        var days = totalMs / 86_400_000
        var msOfDay = totalMs % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        let secondOfDay = msOfDay / 1000
        let ms = msOfDay % 1000
        var text = pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
        text += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
        if milliseconds || ms != 0 { text += "." + pad(ms, 3) }
        return text + "Z"
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(abs(value))
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }

    /// Year, month, day of `days` since 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
