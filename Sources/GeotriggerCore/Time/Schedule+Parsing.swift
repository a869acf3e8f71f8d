extension Schedule {
    /// Reads a `schedule` value: `{timezone, windows: [{days, from, to}]}`. Problems are
    /// reported through `report(key path relative to the value, message)`; nil when the value
    /// cannot be used (then at least one problem was reported).
    ///
    /// `timezone` (default `UTC`) is looked up in `zones`; `windows` must not be empty; `days`
    /// (default all seven) are `mon` ... `sun`; `from` (default `00:00`) is `HH:MM` in
    /// 00:00...23:59; `to` (default `24:00`) is `HH:MM` in 00:00...24:00. `to <= from` runs
    /// past midnight (so `from` = `to` is 24 hours from `from`).
    static func parse(
        _ value: JSONValue, zones: TimeZoneSource, report: (_ path: [JSONPathComponent], _ message: String) -> Void
    ) -> Schedule? {
        guard case .object(let object) = value else {
            report([], "expected an object {timezone, windows: [{days, from, to}]}, found \(value.typeName)")
            return nil
        }
        var usable = true
        var zone = TimeZoneRules.utc
        var windows: [Window]?
        for (key, item) in object.entries {
            switch key {
            case "timezone":
                if case .null = item { continue }
                guard case .string(let name) = item else {
                    report([.key(key)], "expected an IANA time zone name such as \"Europe/Berlin\", found \(item.typeName)")
                    usable = false
                    continue
                }
                do throws(TimeZoneError) {
                    zone = try zones.rules(named: name)
                } catch {
                    report([.key(key)], error.message)
                    usable = false
                }
            case "windows":
                guard case .array(let items) = item else {
                    report([.key(key)], "expected an array of windows {days, from, to}, found \(item.typeName)")
                    usable = false
                    continue
                }
                if items.isEmpty {
                    report([.key(key)], "expected at least one window {days, from, to} (for always, leave schedule out)")
                    usable = false
                }
                var list: [Window] = []
                for (i, element) in items.enumerated() {
                    if let window = Window.parse(element, report: { report([.key(key), .index(i)] + $0, $1) }) {
                        list.append(window)
                    } else {
                        usable = false
                    }
                }
                windows = list
            default:
                report([.key(key)], "unknown key; expected one of timezone, windows")
                usable = false
            }
        }
        guard let windows else {
            report([], "missing key windows (an array of {days, from, to})")
            return nil
        }
        return usable ? Schedule(zone: zone, windows: windows) : nil
    }
}

extension Schedule.Window {
    /// Reads one `{days, from, to}`; nil after reporting a problem.
    static func parse(_ value: JSONValue, report: (_ path: [JSONPathComponent], _ message: String) -> Void) -> Self? {
        guard case .object(let object) = value else {
            report([], "expected a window object {days, from, to}, found \(value.typeName)")
            return nil
        }
        var usable = true
        var window = Self(from: 0, to: 24 * 60)
        for (key, item) in object.entries {
            switch key {
            case "days":
                if case .null = item { continue }
                guard case .array(let names) = item else {
                    report([.key(key)], "expected an array of day names (mon, tue, wed, thu, fri, sat, sun), found \(item.typeName)")
                    usable = false
                    continue
                }
                if names.isEmpty {
                    report([.key(key)], "expected at least one day (leave days out for every day)")
                    usable = false
                }
                var days: UInt8 = 0
                for (i, name) in names.enumerated() {
                    guard case .string(let text) = name, let weekday = Schedule.weekday(named: text) else {
                        report(
                            [.key(key), .index(i)],
                            "unknown day \(TriggerOptions.describe(name)); expected one of \(Schedule.dayNames.joined(separator: ", "))")
                        usable = false
                        continue
                    }
                    days |= 1 << weekday
                }
                window.days = days
            case "from", "to":
                if case .null = item { continue }
                let allowsEnd = key == "to"
                guard case .string(let text) = item, let minutes = minutes(text, allowsEndOfDay: allowsEnd) else {
                    report(
                        [.key(key)],
                        "expected a local time \"HH:MM\" from 00:00 to \(allowsEnd ? "24:00" : "23:59"), found \(TriggerOptions.describe(item))")
                    usable = false
                    continue
                }
                if key == "from" { window.from = minutes } else { window.to = minutes }
            default:
                report([.key(key)], "unknown key; expected one of days, from, to")
                usable = false
            }
        }
        return usable ? window : nil
    }

    /// Minutes after midnight of `HH:MM` (two digits each), or nil.
    static func minutes(_ text: String, allowsEndOfDay: Bool) -> Int? {
        let b = Array(text.utf8)
        func digit(_ c: UInt8) -> Int? { c >= 48 && c <= 57 ? Int(c - 48) : nil }
        guard b.count == 5, b[2] == UInt8(ascii: ":"), let h1 = digit(b[0]), let h2 = digit(b[1]), let m1 = digit(b[3]),
            let m2 = digit(b[4])
        else { return nil }
        let hours = h1 * 10 + h2, minutes = m1 * 10 + m2
        guard minutes < 60 else { return nil }
        if hours == 24 && minutes == 0 && allowsEndOfDay { return 24 * 60 }
        guard hours < 24 else { return nil }
        return hours * 60 + minutes
    }
}
