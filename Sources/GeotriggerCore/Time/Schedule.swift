/// A trigger's `schedule` (docs/schedules.md): local-time windows in an IANA time zone
/// outside which its events are neither published nor journaled (the monitor state is kept all
/// the time). No schedule means always.
public struct Schedule: Sendable, Equatable {
    /// One `{days, from, to}` window.
    public struct Window: Sendable, Equatable {
        /// Bit `d` set: the window starts on weekday `d` (0 = Sunday ... 6 = Saturday).
        public var days: UInt8
        /// Local wall time, minutes after midnight: `from` in 0...1439, `to` in 0...1440.
        public var from: Int
        public var to: Int

        public init(days: UInt8 = 0x7F, from: Int, to: Int) {
            self.days = days
            self.from = from
            self.to = to
        }

        /// True if local second-of-day `second` of a day whose weekday is `weekday` falls in the
        /// window. `to <= from` runs past midnight: it belongs to the day it starts, so the part
        /// after midnight is checked against the day before.
        func contains(weekday: Int, second: Int) -> Bool {
            let start = from * 60, end = to * 60
            if from < to { return days & (1 << weekday) != 0 && second >= start && second < end }
            if days & (1 << weekday) != 0 && second >= start { return true }
            let before = (weekday + 6) % 7
            return days & (1 << before) != 0 && second < end
        }
    }

    /// The zone the windows' wall times are in.
    public var zone: TimeZoneRules
    /// Not empty.
    public var windows: [Window]

    public init(zone: TimeZoneRules, windows: [Window]) {
        self.zone = zone
        self.windows = windows
    }

    /// True if `time` (epoch seconds) is inside some window: its local wall time, with the
    /// zone's offset at that instant (DST included), falls in [from, to) on one of its days.
    public func contains(_ time: Double) -> Bool {
        let seconds = CivilDate.clampedSeconds(time)
        let local = seconds + zone.offset(atSeconds: seconds)
        let day = CivilDate.floorDivide(local, 86_400)
        let second = local - day * 86_400
        let weekday = CivilDate.weekday(days: day)
        return windows.contains { $0.contains(weekday: weekday, second: second) }
    }

    /// The day names of `days`, Monday first.
    public static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// The weekday number (0 = Sunday) of a day name, or nil.
    static func weekday(named name: String) -> Int? {
        dayNames.firstIndex(of: name).map { ($0 + 1) % 7 }
    }
}
