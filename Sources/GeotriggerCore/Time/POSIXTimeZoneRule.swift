/// A POSIX TZ string (POSIX.1-2017 section 8.3, with RFC 8536's extensions), as the footer of a
/// TZif file carries it for the instants after its last transition: `AEST-10AEDT,M10.1.0,M4.1.0/3`.
///
/// Supported: names alphabetic (`AEST`) or quoted (`<+0530>`); offsets `[+-]hh[:mm[:ss]]` (west
/// of UTC positive, as POSIX writes them); the DST offset defaulting to one hour ahead of
/// standard time; rules `Jn` (1...365, February 29 never counted), `n` (0...365, counted) and
/// `Mm.w.d` (week 5 = the last); rule times `/[+-]hh[:mm[:ss]]` with hours -167...167 (default
/// 02:00:00), so `/25` (01:00 the next day) and `/-1` (23:00 the day before) work. DST all year
/// (`EST5EDT,0/0,J365/25`) follows from the rules. A DST name without rules takes the US rules
/// `M3.2.0,M11.1.0`, as tzcode does.
public struct POSIXTimeZoneRule: Sendable, Equatable {
    /// The day of the year a transition falls on.
    public enum Day: Sendable, Equatable {
        /// `Jn`: day 1...365, February 29 never counted (so `J60` is always March 1).
        case julian(Int)
        /// `n`: zero-based day 0...365, February 29 counted in leap years.
        case zeroBased(Int)
        /// `Mm.w.d`: day `weekday` (0 = Sunday) of week `week` (1...5, 5 = the last) of `month`.
        case monthWeek(month: Int, week: Int, weekday: Int)
    }

    /// A transition: its day and its local time (seconds after that day's midnight in the
    /// time that was in effect before it).
    public struct Transition: Sendable, Equatable {
        public var day: Day
        public var time: Int
    }

    /// Daylight saving time: its offset and when it begins and ends each year.
    public struct Daylight: Sendable, Equatable {
        public var offset: Int
        public var start: Transition
        public var end: Transition
    }

    /// Standard time, in seconds east of UTC (the opposite sign of the string's).
    public var standardOffset: Int
    public var daylight: Daylight?

    /// Reads a TZ string; throws for anything POSIX (with RFC 8536's extensions) does not allow.
    public init(_ text: String) throws(TimeZoneError) {
        var scanner = Scanner(bytes: Array(text.utf8), text: text)
        try scanner.name()
        standardOffset = -(try scanner.offset())
        daylight = nil
        if scanner.atEnd { return }
        try scanner.name()
        var dstOffset = standardOffset + 3600
        if let c = scanner.peek, c != UInt8(ascii: ",") { dstOffset = -(try scanner.offset()) }
        var start = Transition(day: .monthWeek(month: 3, week: 2, weekday: 0), time: 7200)
        var end = Transition(day: .monthWeek(month: 11, week: 1, weekday: 0), time: 7200)
        if !scanner.atEnd {
            try scanner.expect(UInt8(ascii: ","))
            start = try scanner.transition()
            try scanner.expect(UInt8(ascii: ","))
            end = try scanner.transition()
        }
        guard scanner.atEnd else { throw scanner.failure("unexpected text after the rules") }
        daylight = Daylight(offset: dstOffset, start: start, end: end)
    }

    /// The offset from UTC, in seconds east, at `seconds` since 1970-01-01T00:00:00Z.
    public func offset(at seconds: Int) -> Int {
        guard let daylight else { return standardOffset }
        let year = CivilDate.civil(days: CivilDate.floorDivide(seconds + standardOffset, 86_400)).year
        // The transitions of the years around it, in order; the last one at or before the
        // instant decides. At the same instant an end sorts before a start (DST all year).
        var latest: (instant: Int, isStart: Bool)?
        for y in (year - 1)...(year + 1) {
            let start = instant(of: daylight.start, year: y, offsetBefore: standardOffset)
            let end = instant(of: daylight.end, year: y, offsetBefore: daylight.offset)
            for candidate in [(end, false), (start, true)] where candidate.0 <= seconds {
                if let l = latest, (l.instant, l.isStart ? 1 : 0) > (candidate.0, candidate.1 ? 1 : 0) { continue }
                latest = candidate
            }
        }
        return latest?.isStart == true ? daylight.offset : standardOffset
    }

    /// The UTC instant of `transition` in `year`, given the offset in effect before it.
    func instant(of transition: Transition, year: Int, offsetBefore: Int) -> Int {
        day(of: transition.day, year: year) * 86_400 + transition.time - offsetBefore
    }

    /// The day number (since 1970-01-01) of `day` in `year`.
    func day(of day: Day, year: Int) -> Int {
        let january1 = CivilDate.days(year: year, month: 1, day: 1)
        switch day {
        case .julian(let n):
            return january1 + n - 1 + (CivilDate.isLeap(year) && n >= 60 ? 1 : 0)
        case .zeroBased(let n):
            return january1 + n
        case .monthWeek(let month, let week, let weekday):
            let first = CivilDate.days(year: year, month: month, day: 1)
            var offset = (weekday - CivilDate.weekday(days: first) + 7) % 7 + (week - 1) * 7
            let length = CivilDate.daysInMonth(year: year, month: month)
            while offset >= length { offset -= 7 }
            return first + offset
        }
    }

    /// A cursor over the TZ string's bytes.
    private struct Scanner {
        let bytes: [UInt8]
        let text: String
        var i = 0

        init(bytes: [UInt8], text: String) {
            self.bytes = bytes
            self.text = text
        }

        var atEnd: Bool { i >= bytes.count }
        var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

        func failure(_ what: String) -> TimeZoneError {
            TimeZoneError("invalid TZ string \"\(text)\": \(what) at offset \(i)")
        }

        mutating func expect(_ c: UInt8) throws(TimeZoneError) {
            guard peek == c else { throw failure("expected \"\(Character(Unicode.Scalar(c)))\"") }
            i += 1
        }

        /// A zone abbreviation: 3 or more letters, or `<...>` of letters, digits, `+` and `-`.
        mutating func name() throws(TimeZoneError) {
            if peek == UInt8(ascii: "<") {
                i += 1
                let start = i
                while let c = peek, c != UInt8(ascii: ">") {
                    guard isLetter(c) || isDigit(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") else {
                        throw failure("unexpected character in a quoted name")
                    }
                    i += 1
                }
                guard i - start >= 3 else { throw failure("a name needs at least 3 characters") }
                try expect(UInt8(ascii: ">"))
                return
            }
            let start = i
            while let c = peek, isLetter(c) { i += 1 }
            guard i - start >= 3 else { throw failure("expected a zone name of at least 3 letters") }
        }

        /// `[+-]hh[:mm[:ss]]` in seconds (hours 0...24 for an offset).
        mutating func offset() throws(TimeZoneError) -> Int { try signedTime(maxHours: 24) }

        /// `[+-]hh[:mm[:ss]]` with hours up to `maxHours`, in seconds.
        mutating func signedTime(maxHours: Int) throws(TimeZoneError) -> Int {
            var sign = 1
            if peek == UInt8(ascii: "+") {
                i += 1
            } else if peek == UInt8(ascii: "-") {
                sign = -1
                i += 1
            }
            let hours = try number(maxDigits: 3, max: maxHours)
            var seconds = hours * 3600
            if peek == UInt8(ascii: ":") {
                i += 1
                seconds += try number(maxDigits: 2, max: 59) * 60
                if peek == UInt8(ascii: ":") {
                    i += 1
                    seconds += try number(maxDigits: 2, max: 59)
                }
            }
            return sign * seconds
        }

        /// `date[/time]`.
        mutating func transition() throws(TimeZoneError) -> Transition {
            let day: Day
            if peek == UInt8(ascii: "J") {
                i += 1
                let n = try number(maxDigits: 3, max: 365)
                guard n >= 1 else { throw failure("Jn needs n in 1...365") }
                day = .julian(n)
            } else if peek == UInt8(ascii: "M") {
                i += 1
                let month = try number(maxDigits: 2, max: 12)
                try expect(UInt8(ascii: "."))
                let week = try number(maxDigits: 1, max: 5)
                try expect(UInt8(ascii: "."))
                let weekday = try number(maxDigits: 1, max: 6)
                guard month >= 1, week >= 1 else { throw failure("Mm.w.d needs m in 1...12 and w in 1...5") }
                day = .monthWeek(month: month, week: week, weekday: weekday)
            } else {
                day = .zeroBased(try number(maxDigits: 3, max: 365))
            }
            var time = 7200
            if peek == UInt8(ascii: "/") {
                i += 1
                time = try signedTime(maxHours: 167)
            }
            return Transition(day: day, time: time)
        }

        /// A decimal number of 1 to `maxDigits` digits, at most `max`.
        mutating func number(maxDigits: Int, max: Int) throws(TimeZoneError) -> Int {
            var value = 0
            var digits = 0
            while let c = peek, isDigit(c), digits < maxDigits {
                value = value * 10 + Int(c - UInt8(ascii: "0"))
                digits += 1
                i += 1
            }
            guard digits > 0 else { throw failure("expected a number") }
            guard value <= max else { throw failure("\(value) is out of range (at most \(max))") }
            return value
        }

        func isLetter(_ c: UInt8) -> Bool { (c | 0x20) >= UInt8(ascii: "a") && (c | 0x20) <= UInt8(ascii: "z") }
        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    }
}
