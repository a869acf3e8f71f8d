import GeotriggerCore

/// The progress of a long load of the fences folder, for the log: once the load has taken
/// ``firstAfter`` seconds, and then every ``every`` seconds,
/// `loading fences: 412000 fences, 139 MB of 337 MB read`; when it ends, if anything was
/// logged, `loaded fences: 1000000 fences, 337 MB in 6.2 s`. A load quicker than
/// ``firstAfter`` logs nothing.
final class FenceLoadProgress {
    let firstAfter: Double
    let every: Double
    private let clock: () -> Double
    private let log: (String) -> Void
    private var started = 0.0
    private var next = 0.0
    /// The size of every layer file of the folder.
    private var totalBytes = 0
    /// Features and bytes of the files already read.
    private var doneFeatures = 0
    private var doneBytes = 0
    private(set) var linesLogged = 0

    /// `clock`: seconds (monotonic); `log`: where a line goes (a notice of the gateway's log).
    init(firstAfter: Double = 1, every: Double = 3, clock: @escaping () -> Double = MonotonicClock.now,
         log: @escaping (String) -> Void) {
        self.firstAfter = firstAfter
        self.every = every
        self.clock = clock
        self.log = log
    }

    /// Progress lines as notices of `logger`.
    convenience init(logger: Logger) {
        self.init { logger.notice($0) }
    }

    /// The load of files of `totalBytes` bytes in all starts.
    func start(totalBytes: Int) {
        self.totalBytes = totalBytes
        doneFeatures = 0
        doneBytes = 0
        linesLogged = 0
        started = clock()
        next = started + firstAfter
    }

    /// The file being read is at `features` features and `bytesRead` bytes.
    func update(features: Int, bytesRead: Int) {
        let now = clock()
        guard now >= next else { return }
        next = now + every
        linesLogged += 1
        log("loading fences: \(doneFeatures + features) fences, \(Self.megabytes(doneBytes + bytesRead)) of \(Self.megabytes(totalBytes)) read")
    }

    /// A file of `bytes` bytes with `features` features has been read.
    func fileDone(features: Int, bytes: Int) {
        doneFeatures += features
        doneBytes += bytes
    }

    /// The load ended.
    func finish() {
        guard linesLogged > 0 else { return }
        let seconds = clock() - started
        log("loaded fences: \(doneFeatures) fences, \(Self.megabytes(doneBytes)) in \((seconds * 10).rounded() / 10) s")
    }

    /// `337 MB` (mebibytes; one decimal below 10: `0.7 MB`).
    static func megabytes(_ bytes: Int) -> String {
        let mb = Double(bytes) / 1_048_576
        return mb < 10 ? "\((mb * 10).rounded() / 10) MB" : "\(Int(mb.rounded())) MB"
    }
}
