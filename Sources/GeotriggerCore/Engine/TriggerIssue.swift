/// One problem found in the trigger configuration, a layer's trigger defaults, or a fence as a
/// trigger sees it.
///
/// The key path is kept as data (``path``, relative to the document named by ``origin``) so a
/// config loader can turn it into `FILE:LINE:COLUMN`; ``description`` is the text without a
/// location, e.g. `triggers[1] ("garden"): rule: expected one of enter, exit, enterOrExit, found "entre"`.
public struct TriggerIssue: Sendable, Equatable, CustomStringConvertible {
    /// The document a ``path`` points into.
    public enum Origin: Sendable, Equatable {
        /// The config file (paths start at its top level: `triggers[1].rule`).
        case config
        /// A fence layer file, by layer name and file as given (paths start at the
        /// FeatureCollection: `geotrigger.rule`, `features[3]`).
        case layer(name: String, file: String)
    }

    public var origin: Origin
    /// The key path of the offending value inside the origin document.
    public var path: [JSONPathComponent]
    /// Who has the problem, as people name it: `triggers[1] ("garden")`, `fences/poi.geojson`,
    /// `fences/poi.geojson: feature 3 ("Cactus")`.
    public var subject: String
    /// The key path below the subject that is wrong (`rule`, `devices[2]`), or empty.
    public var key: String
    /// What is wrong and what was expected.
    public var message: String

    public init(origin: Origin, path: [JSONPathComponent], subject: String, key: String, message: String) {
        self.origin = origin
        self.path = path
        self.subject = subject
        self.key = key
        self.message = message
    }

    public var description: String {
        key.isEmpty ? "\(subject): \(message)" : "\(subject): \(key): \(message)"
    }
}

/// Every problem found while reading triggers or building an ``EngineSnapshot``, in the order
/// found (the `check` command lists them all).
public struct TriggerError: Error, Sendable, Equatable, CustomStringConvertible {
    public var issues: [TriggerIssue]

    public init(_ issues: [TriggerIssue]) { self.issues = issues }

    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
