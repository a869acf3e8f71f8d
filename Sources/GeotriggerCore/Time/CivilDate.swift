/// Proleptic Gregorian calendar arithmetic on whole days since 1970-01-01 (Howard Hinnant's
/// `days_from_civil` / `civil_from_days`), for ISO-8601 texts, track dates, time zone rules and
/// schedules. Every function is total for the years a `Double` fix time can reach after clamping
/// (see ``clampedSeconds(_:)``).
enum CivilDate {
    /// Days from 1970-01-01 to `year`-`month`-`day` (month 1...12).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The (year, month, day) of day number `days` since 1970-01-01.
    static func civil(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Day of the week of day number `days`: 0 = Sunday ... 6 = Saturday (1970-01-01 was a Thursday).
    static func weekday(days: Int) -> Int {
        let r = (days + 4) % 7
        return r < 0 ? r + 7 : r
    }

    /// `floor(a / b)` for b > 0.
    static func floorDivide(_ a: Int, _ b: Int) -> Int {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    /// Whole seconds of `time` (epoch seconds), rounded down and clamped to about ±31,000 years,
    /// so that no calendar arithmetic on it can overflow (a non-finite time becomes 0).
    static func clampedSeconds(_ time: Double) -> Int {
        guard time.isFinite else { return 0 }
        let limit = 1.0e12
        return Int(min(max(time, -limit), limit).rounded(.down))
    }
}
