/// A device's speed measured between its fixes (docs/trips.md "Speed"): the distance from an
/// earlier fix over the time between them, only where that distance is more than both fixes'
/// accuracies together (their sum), so GPS jitter around a standing device is not speed: two
/// fixes each within its accuracy of the same place are at most the sum apart. (More than the
/// larger one alone would not do: two fixes 8 m either side of a parked van with 10 m
/// accuracy are 16 m apart, 16 m/s at one fix a second.)
///
/// The earlier fix is an anchor: the last fix a speed was measured to (or the first one). A fix
/// within the accuracies of the anchor gives no speed and leaves the anchor where it is, so a
/// slow device sending many fixes is measured over the few seconds it takes to leave them; a
/// fix more than ``maximumInterval`` seconds after the anchor gives none and becomes the
/// anchor. A fix without an accuracy counts as exact (accuracy 0). Fixes not after the anchor
/// in time are ignored. Four words and a flag; nothing is allocated.
public struct FixSpeed: Sendable, Equatable {
    /// Two fixes farther apart in time than this (seconds) give no speed.
    public static let maximumInterval = 60.0

    /// At least this many seconds between the two fixes of a speed (0: any interval).
    public let minimumInterval: Double
    private var anchorLat = 0.0, anchorLon = 0.0, anchorTime = 0.0, anchorAccuracy = 0.0
    private var hasAnchor = false

    public init(minimumInterval: Double = 0) {
        self.minimumInterval = minimumInterval
    }

    /// The speed (m/s) from the anchor to `fix`, if it measures one; the anchor moves to `fix`
    /// when it does.
    public mutating func measure(_ fix: LocationUpdate) -> Double? {
        let accuracy = fix.accuracy.map { $0.isFinite ? Swift.max(0, $0) : 0 } ?? 0
        guard hasAnchor else {
            setAnchor(fix, accuracy: accuracy)
            return nil
        }
        let interval = fix.time - anchorTime
        guard interval > 0 else { return nil }
        guard interval <= FixSpeed.maximumInterval else {
            setAnchor(fix, accuracy: accuracy)
            return nil
        }
        guard interval >= minimumInterval else { return nil }
        let distance = Earth.distance(Coordinate(lat: anchorLat, lon: anchorLon), fix.coordinate)
        guard distance > accuracy + anchorAccuracy else { return nil }
        setAnchor(fix, accuracy: accuracy)
        return distance / interval
    }

    /// The device's speed at `fix` (m/s): the speed it reports with it, else ``measure(_:)``
    /// (which runs either way, so the anchor follows every fix).
    public mutating func speed(of fix: LocationUpdate) -> Double? {
        let measured = measure(fix)
        if let reported = fix.speed, reported.isFinite, reported >= 0 { return reported }
        return measured
    }

    private mutating func setAnchor(_ fix: LocationUpdate, accuracy: Double) {
        anchorLat = fix.lat
        anchorLon = fix.lon
        anchorTime = fix.time
        anchorAccuracy = accuracy
        hasAnchor = true
    }
}
