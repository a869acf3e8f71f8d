/// One trigger (an ArcGIS FenceGeotrigger) as configured: a name, the layers it watches and the
/// keys it sets. Keys it leaves unset come from each watched layer's `geotrigger` defaults,
/// then from the built-in defaults (see ``TriggerSettings``).
public struct Trigger: Sendable, Equatable {
    /// Where a trigger was defined.
    public enum Source: Sendable, Equatable {
        /// `triggers[index]` of the config.
        case config(index: Int)
        /// Made for a layer because the config has no `triggers` key.
        case layer(String)
    }

    /// The trigger name, used in topics: not empty, no `/`, `+` or `#`.
    public var name: String
    /// `fences`: the layer names it watches; nil means every layer.
    public var layers: [String]?
    public var options: TriggerOptions
    public var source: Source

    public init(name: String, layers: [String]? = nil, options: TriggerOptions = TriggerOptions(), source: Source) {
        self.name = name
        self.layers = layers
        self.options = options
        self.source = source
    }

    /// How messages name this trigger: `triggers[1] ("garden")` or `trigger "garden"`.
    public var label: String {
        switch source {
        case .config(let i): "triggers[\(i)] (\"\(name)\")"
        case .layer: "trigger \"\(name)\""
        }
    }

    /// Why `name` cannot be a trigger name, or nil if it can.
    static func problem(withName name: String) -> String? {
        if name.isEmpty { return "expected a trigger name, found an empty string" }
        if let bad = name.first(where: { $0 == "/" || $0 == "+" || $0 == "#" }) {
            return "a trigger name is one topic level: it must not contain \"\(bad)\", found \"\(name)\""
        }
        if name == reservedForTrips {
            return "\"\(name)\" is reserved: trip events are published under it (PREFIX/events/trips/DEVICE, docs/trips.md); choose another name"
        }
        return nil
    }

    /// The trigger name of trip events (docs/trips.md "Events"), which no trigger may take.
    public static let reservedForTrips = "trips"

    /// Reads the config's `triggers` value: nil (the key is missing) gives one trigger per
    /// layer named after it; `[]` gives none. Every problem is collected into one ``TriggerError``.
    /// `zones`: where `schedule.timezone` names are looked up.
    public static func parseAll(
        _ triggers: JSONValue?, layers: [FenceLayer], zones: TimeZoneSource = .utcOnly
    ) throws(TriggerError) -> [Trigger] {
        let (result, issues) = parseCollecting(triggers, layers: layers, zones: zones)
        if !issues.isEmpty { throw TriggerError(issues) }
        return result
    }

    /// Like ``parseAll(_:layers:)``, but returns the problems beside the triggers that could be
    /// read (with defaults where a key was wrong), so that later checks (expressions, buffers)
    /// can still run and every problem is reported at once.
    static func parseCollecting(
        _ triggers: JSONValue?, layers: [FenceLayer], zones: TimeZoneSource
    ) -> (triggers: [Trigger], issues: [TriggerIssue]) {
        var issues: [TriggerIssue] = []
        guard let triggers else {
            var result: [Trigger] = []
            for layer in layers {
                if let problem = problem(withName: layer.name) {
                    issues.append(
                        TriggerIssue(
                            origin: .layer(name: layer.name, file: layer.file), path: [],
                            subject: layer.file.isEmpty ? "layer \"\(layer.name)\"" : layer.file, key: "",
                            message: "the trigger made for this layer takes its name: \(problem)"))
                    continue
                }
                result.append(Trigger(name: layer.name, layers: [layer.name], source: .layer(layer.name)))
            }
            return (result, issues)
        }
        guard case .array(let items) = triggers else {
            return ([], [
                TriggerIssue(
                    origin: .config, path: [.key("triggers")], subject: "triggers", key: "",
                    message: "expected an array of triggers, found \(triggers.typeName)")
            ])
        }
        let layerNames = Set(layers.map(\.name))
        var result: [Trigger] = []
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let base: [JSONPathComponent] = [.key("triggers"), .index(index)]
            guard case .object(let object) = item else {
                issues.append(
                    TriggerIssue(
                        origin: .config, path: base, subject: "triggers[\(index)]", key: "",
                        message: "expected a trigger object, found \(item.typeName)"))
                continue
            }
            var name = ""
            var subject = "triggers[\(index)]"
            func report(_ path: [JSONPathComponent], _ message: String) {
                issues.append(
                    TriggerIssue(
                        origin: .config, path: base + path, subject: subject, key: path.isEmpty ? "" : path.pathString, message: message))
            }
            switch object["name"] {
            case .string(let s)?:
                name = s
                subject = "triggers[\(index)] (\"\(s)\")"
                if let problem = problem(withName: s) { report([.key("name")], problem) }
                if let earlier = seen[s] {
                    report([.key("name")], "the name \"\(s)\" is already used by triggers[\(earlier)]")
                } else {
                    seen[s] = index
                }
            case nil, .null?:
                report([], "missing key name (the trigger name used in event topics)")
            case let other?:
                report([.key("name")], "expected a trigger name string, found \(other.typeName)")
            }
            var watched: [String]?
            switch object["fences"] {
            case nil, .null?: break
            case .array(let names)?:
                var list: [String] = []
                for (i, n) in names.enumerated() {
                    guard case .string(let s) = n else {
                        report([.key("fences"), .index(i)], "expected a layer name string, found \(n.typeName)")
                        continue
                    }
                    if !layerNames.contains(s) {
                        let known = layers.map(\.name).sorted().joined(separator: ", ")
                        report(
                            [.key("fences"), .index(i)],
                            "no fence layer named \"\(s)\" (layers: \(known.isEmpty ? "none" : known))")
                    } else if !list.contains(s) {
                        list.append(s)
                    }
                }
                watched = list
            case let other?:
                report([.key("fences"), ], "expected an array of layer names, found \(other.typeName)")
            }
            let options = TriggerOptions.parse(object, handledKeys: ["name", "fences"], zones: zones, report: report)
            result.append(Trigger(name: name, layers: watched, options: options, source: .config(index: index)))
        }
        return (result, issues)
    }
}
