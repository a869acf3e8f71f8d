/// A device's recent moving speed, for a trip's ETA (docs/trips.md "Progress"): the median of
/// the speeds measured between its fixes (``FixSpeed``: moved more than both accuracies, at
/// most 60 s apart) over the last ``window`` seconds of fix time.
///
/// Stops give no speeds (a standing device stays within its accuracy), so they are left out
/// rather than pulling the median down; a stop longer than the window leaves no speed at all.
/// Speeds are measured over at least ``sampleInterval`` seconds, which keeps at most 60 of them
/// (two arrays of doubles, allocated once) and smooths single fixes' errors. The median is
/// worked out when a speed comes or goes, not per fix.
public struct MovingSpeed: Sendable, Equatable {
    /// Seconds of fix time the median looks back.
    public static let window = 300.0
    /// The shortest interval (seconds) a speed is measured over.
    public static let sampleInterval = 5.0

    private var fixSpeed = FixSpeed(minimumInterval: MovingSpeed.sampleInterval)
    /// The speeds in the window, oldest first, with their fix times.
    private var times: [Double] = []
    private var speeds: [Double] = []
    /// The same speeds in increasing order.
    private var sorted: [Double] = []
    /// The median of ``sorted``, if any.
    public private(set) var median: Double?

    public init() {}

    /// The number of speeds in the window.
    public var count: Int { speeds.count }

    /// Takes `fix`: measures a speed if it can, and drops speeds older than the window.
    public mutating func add(_ fix: LocationUpdate) {
        var changed = false
        while let first = times.first, first < fix.time - MovingSpeed.window {
            let speed = speeds[0]
            times.removeFirst()
            speeds.removeFirst()
            if let k = sorted.firstIndex(of: speed) { sorted.remove(at: k) }
            changed = true
        }
        if let speed = fixSpeed.measure(fix), speed.isFinite {
            if times.isEmpty {
                let capacity = Int(MovingSpeed.window / MovingSpeed.sampleInterval) + 1
                times.reserveCapacity(capacity)
                speeds.reserveCapacity(capacity)
                sorted.reserveCapacity(capacity)
            }
            times.append(fix.time)
            speeds.append(speed)
            var low = 0, high = sorted.count
            while low < high {
                let mid = (low + high) / 2
                if sorted[mid] < speed { low = mid + 1 } else { high = mid }
            }
            sorted.insert(speed, at: low)
            changed = true
        }
        guard changed else { return }
        let n = sorted.count
        median = n == 0 ? nil : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
    }
}
