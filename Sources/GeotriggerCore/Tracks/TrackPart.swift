/// One recording (or planned route) inside a track file: a GPX `trk` or `rte`, a TCX
/// `Activity` or `Course`, a KML `gx:Track` or `LineString`. Replay decides
/// per part whether it has times, and gives each named part its own device
/// (``Track/replayPlan(file:device:defaultDevice:speed:start:)``).
public struct TrackPart: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// A GPX `trk` or KML `gx:Track`: what a device recorded (GPX segments, `trkseg`,
        /// follow each other).
        case track
        /// A TCX `Activity` (its laps follow each other).
        case activity
        /// A planned route (GPX `rte`, TCX `Course`, KML `LineString`), read only from a file
        /// without recordings.
        case route
    }

    public var kind: Kind
    /// 1-based among the file's parts of its kind, counting those ignored.
    public var number: Int
    /// The part's `<name>`, as the file has it.
    public var name: String?
    /// The line the part starts on.
    public var line: Int
    /// Its points, as indices into ``Track/points``.
    public var points: Range<Int>

    public init(kind: Kind, number: Int, name: String? = nil, line: Int, points: Range<Int>) {
        self.kind = kind
        self.number = number
        self.name = name
        self.line = line
        self.points = points
    }

    /// `track 2 "ACTIVE LOG #2" (line 40)`, for messages.
    public var label: String {
        "\(kind.rawValue) \(number)" + (name.map { " \"\($0)\"" } ?? "") + " (line \(line))"
    }
}
