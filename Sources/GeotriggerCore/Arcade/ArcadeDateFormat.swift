/// Formats dates (epoch seconds) as text, always in UTC: the gateway has no notion of a
/// local time zone, and events carry UTC times.
///
/// `Text(date, format)` understands the Arcade (moment-style) tokens for the common patterns:
/// `Y`/`YYYY` year, `YY` two-digit year, `M` `MM` month number, `MMM` `MMMM` month name,
/// `D` `DD` day of month, `DDD` `DDDD` day of year, `d` day of the week 1-7 (Monday is 1, as
/// ISO 8601), `ddd` `dddd` weekday name, `H` `HH` 24-hour, `h` `hh` 12-hour, `m` `mm` minutes,
/// `s` `ss` seconds, `S` `SS` `SSS` fractions of a second, `A` `a` AM/PM, `Z` the offset in
/// narrow hours (`+0`), `ZZ` `+00:00`, `ZZZ` `+0000`, `X` epoch seconds, `x` epoch
/// milliseconds; text inside `[...]` is copied as is. English names.
enum ArcadeDateFormat {
    /// The civil UTC fields of an instant.
    struct Fields {
        var year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int
        var millisecond: Int, weekday: Int, dayOfYear: Int
    }

    static let monthNames = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September",
        "October", "November", "December",
    ]
    static let weekdayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// Within ±100 million days of 1970, as JavaScript dates (so the integer math cannot overflow).
    static func isValid(_ seconds: Double) -> Bool {
        seconds.isFinite && abs(seconds) <= 8.64e12
    }

    static func fields(_ seconds: Double) -> Fields {
        let totalMilliseconds = Int64((seconds * 1000).rounded(.down))
        var days = totalMilliseconds / 86_400_000
        var msOfDay = totalMilliseconds % 86_400_000
        if msOfDay < 0 {
            msOfDay += 86_400_000
            days -= 1
        }
        let (civilYear, civilMonth, civilDay) = CivilDate.civil(days: Int(days))
        let year = Int64(civilYear), month = Int64(civilMonth), day = Int64(civilDay)
        let isLeap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        let cumulative = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
        let dayOfYear = cumulative[Int(month) - 1] + Int(day) + (isLeap && month > 2 ? 1 : 0)
        var weekday = (days + 4) % 7  // 1970-01-01 was a Thursday
        if weekday < 0 { weekday += 7 }
        return Fields(
            year: Int(year), month: Int(month), day: Int(day), hour: Int(msOfDay / 3_600_000),
            minute: Int(msOfDay / 60000 % 60), second: Int(msOfDay / 1000 % 60),
            millisecond: Int(msOfDay % 1000), weekday: Int(weekday), dayOfYear: dayOfYear)
    }

    static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(abs(value))
        let sign = value < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// `2026-11-30T12:00:00Z`, or `2026-11-30T12:00:00.120Z` when there are milliseconds.
    static func iso8601(_ seconds: Double) -> String {
        guard isValid(seconds) else { return "Invalid Date" }
        let f = fields(seconds)
        var out = padded(f.year, 4) + "-" + padded(f.month, 2) + "-" + padded(f.day, 2)
        out += "T" + padded(f.hour, 2) + ":" + padded(f.minute, 2) + ":" + padded(f.second, 2)
        if f.millisecond != 0 { out += "." + padded(f.millisecond, 3) }
        return out + "Z"
    }

    /// Formats with the tokens listed on the type.
    static func format(_ seconds: Double, pattern: String) -> String {
        guard isValid(seconds) else { return "Invalid Date" }
        let f = fields(seconds)
        let chars = Array(pattern)
        var out = ""
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == "[" {
                var j = i + 1
                while j < chars.count, chars[j] != "]" { j += 1 }
                out += String(chars[(i + 1)..<min(j, chars.count)])
                i = j + 1
                continue
            }
            var run = 1
            while i + run < chars.count, chars[i + run] == c { run += 1 }
            let hour12 = f.hour % 12 == 0 ? 12 : f.hour % 12
            var consumed = run
            switch c {
            case "Y":
                if run == 2 { out += padded(f.year % 100, 2) } else { out += padded(f.year, 4) }
            case "M":
                switch run {
                case 1: out += String(f.month)
                case 2: out += padded(f.month, 2)
                case 3: out += String(monthNames[f.month - 1].prefix(3))
                default: out += monthNames[f.month - 1]; consumed = min(run, 4)
                }
            case "D":
                switch run {
                case 1: out += String(f.day)
                case 2: out += padded(f.day, 2)
                case 3: out += String(f.dayOfYear)
                default: out += padded(f.dayOfYear, 3); consumed = min(run, 4)
                }
            case "d":
                switch run {
                case 1: out += String(f.weekday == 0 ? 7 : f.weekday)
                case 2: out += String(weekdayNames[f.weekday].prefix(2))
                case 3: out += String(weekdayNames[f.weekday].prefix(3))
                default: out += weekdayNames[f.weekday]; consumed = min(run, 4)
                }
            case "H": out += run >= 2 ? padded(f.hour, 2) : String(f.hour); consumed = min(run, 2)
            case "h": out += run >= 2 ? padded(hour12, 2) : String(hour12); consumed = min(run, 2)
            case "m": out += run >= 2 ? padded(f.minute, 2) : String(f.minute); consumed = min(run, 2)
            case "s": out += run >= 2 ? padded(f.second, 2) : String(f.second); consumed = min(run, 2)
            case "S":
                let ms = padded(f.millisecond, 3)
                out += String(ms.prefix(min(run, 3)))
                consumed = min(run, 3)
            case "A": out += f.hour < 12 ? "AM" : "PM"; consumed = 1
            case "a": out += f.hour < 12 ? "am" : "pm"; consumed = 1
            case "Z":
                consumed = min(run, 3)
                out += consumed == 1 ? "+0" : consumed == 2 ? "+00:00" : "+0000"
            case "X": out += String(Int64((seconds).rounded(.down))); consumed = 1
            case "x": out += String(Int64((seconds * 1000).rounded(.down))); consumed = 1
            default: out += String(repeating: c, count: run)
            }
            i += consumed
        }
        return out
    }
}
