#if canImport(Glibc)
import Glibc
#endif
import GeotriggerCore

/// What `serve`, `check`, `locate` and `replay` build before they work: the config, the fence
/// layers of its folder and the compiled triggers, with every problem found on the way.
struct GatewaySetup: Sendable {
    let config: GatewayConfig
    let layers: [FenceLayer]
    let snapshot: EngineSnapshot
    /// Layer names in triggers' `fences` that no file has: runtime layers (fences over MQTT).
    let runtimeLayers: [String]

    /// Every problem, one line each, located as precisely as possible
    /// (`FILE:LINE:COLUMN: key path: message`, or `FILE: feature N ("name"): message`).
    struct Failure: Error, Sendable, CustomStringConvertible {
        var problems: [String]
        var description: String { problems.joined(separator: "\n") }
    }

    /// Reads `configFile` (nil: defaults), the fence folder and the triggers. `fencesOverride`
    /// replaces `gateway.fences` (the `--fences` option). `progress` logs a long fence load.
    /// `reusing`: the live snapshot on a SIGHUP reload, whose prepared fences the unchanged
    /// fences keep (so a reload does not prepare, and hold, a second set of them).
    static func load(
        configFile: String?, fencesOverride: String? = nil, progress: FenceLoadProgress? = nil, reusing previous: EngineSnapshot? = nil
    ) throws(Failure) -> GatewaySetup {
        try load(config: loadConfig(configFile: configFile), fencesOverride: fencesOverride, progress: progress, reusing: previous)
    }

    /// Reads `configFile` (nil: defaults) alone: the cheap first half of
    /// ``load(configFile:fencesOverride:progress:reusing:)``, which `serve` runs before the fence load
    /// to know where to say `starting`.
    static func loadConfig(configFile: String?) throws(Failure) -> GatewayConfig {
        guard let configFile else { return GatewayConfig() }
        do {
            return try GatewayConfig.load(file: configFile)
        } catch {
            throw Failure(problems: error.errors.map(\.description))
        }
    }

    /// Reads the fence folder of `config` (or `fencesOverride`) and compiles its triggers: the
    /// second half of ``load(configFile:fencesOverride:progress:reusing:)``.
    static func load(
        config: GatewayConfig, fencesOverride: String? = nil, progress: FenceLoadProgress? = nil, reusing previous: EngineSnapshot? = nil
    ) throws(Failure) -> GatewaySetup {
        let folder = fencesOverride ?? config.resolve(config.gateway.fences)
        var problems: [String] = []
        var (layers, fenceErrors) = FenceFolder.load(
            folder, maxVertices: config.fences.maxVertices, progress: progress, reusing: previous)
        problems += fenceErrors.map(\.description)
        // A layer name in a trigger's `fences` that no file has is a runtime layer (fences
        // published over MQTT, see RuntimeFences): it starts empty.
        let runtimeLayers = runtimeLayerNames(config.triggers, fileLayers: layers)
        for name in runtimeLayers {
            layers.append(FenceLayer(name: name, file: "", fences: []))
        }
        let configTriggers: JSONValue? = config.triggers.map { .array($0.map { .object($0) }) }
        do {
            let snapshot = try EngineSnapshot(layers: layers, configTriggers: configTriggers, zones: SystemTimeZones.source)
            for (i, settings) in snapshot.settings.enumerated() where settings.delivery != .local && config.remote == nil {
                if !snapshot.settings[..<i].contains(where: { $0.trigger == settings.trigger && $0.delivery == settings.delivery }) {
                    problems.append("trigger \"\(settings.trigger)\": delivery \(settings.delivery.rawValue) needs a \"remote\" broker in the config")
                }
            }
            if snapshot.pushesPhoneRegions { problems += phoneFeedProblems(config, triggers: snapshot.phoneTriggerNames) }
            guard problems.isEmpty else { throw Failure(problems: problems) }
            releaseFreedMemory()
            return GatewaySetup(config: config, layers: layers, snapshot: snapshot, runtimeLayers: runtimeLayers)
        } catch let error as TriggerError {
            problems += error.issues.map { describe($0, config: config) }
            throw Failure(problems: problems)
        } catch {
            throw error as! Failure
        }
    }

    /// Gives the heap freed since start (or since the last call) back to the system. Loading
    /// fences frees much more than it keeps (the file's text, its features' values) and glibc
    /// keeps freed memory for reuse, so without this a gateway idles with its peak. Called at
    /// the end of ``load(config:fencesOverride:progress:reusing:)`` and after a SIGHUP reload is adopted.
    ///
    /// `malloc_trim` is declared in `<malloc.h>`, which the Glibc module does not include: it is
    /// looked up by name (and absent on a C library without it, where this does nothing).
    static func releaseFreedMemory() {
        #if canImport(Glibc)
        typealias MallocTrim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        #endif
    }

    /// The string entries of the triggers' `fences` arrays that name no file layer, sorted.
    static func runtimeLayerNames(_ triggers: [JSONObject]?, fileLayers: [FenceLayer]) -> [String] {
        let files = Set(fileLayers.map(\.name))
        var names: Set<String> = []
        for trigger in triggers ?? [] {
            guard case .array(let items)? = trigger["fences"] else { continue }
            for case .string(let name) in items where !files.contains(name) && !name.isEmpty
                && !name.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) {
                names.insert(name)
            }
        }
        return names.sorted()
    }

    /// The `owntracks` feeds whose phones' transitions cannot be subscribed while `triggers`
    /// have `phones` on (docs/phones.md): the gateway reads them on `FILTER/event`, and for a
    /// filter ending in `#` that is no topic filter (libmosquitto refuses it). Found by `check`,
    /// at start and by a SIGHUP reload, before anything is applied.
    static func phoneFeedProblems(_ config: GatewayConfig, triggers: [String]) -> [String] {
        var problems: [String] = []
        for (index, feed) in config.feeds.enumerated() {
            guard case .mqtt(_, let topic, .owntracks, _, _) = feed else { continue }
            do {
                _ = try TopicFilter(topic + "/event")
            } catch {
                let path: [JSONPathComponent] = [.key("feeds"), .index(index), .key("topic")]
                let location = config.document.flatMap { GatewayConfig.nearestLocation(of: path, in: $0) }
                let at = config.file.map { file in location.map { "\(file):\($0.line):\($0.column): " } ?? "\(file): " } ?? ""
                let names = triggers.map { "\"\($0)\"" }.joined(separator: ", ")
                problems.append(
                    at + "\(path.pathString): \"\(topic)\" cannot carry the phones of trigger\(triggers.count == 1 ? "" : "s") \(names): "
                        + "their transitions are read on \"\(topic)/event\", which is no topic filter ('#' must be the last level); "
                        + "expected a filter of '+' levels, such as \"owntracks/+/+\"")
            }
        }
        return problems
    }

    /// A trigger problem with the config file's line and column when it comes from the config.
    static func describe(_ issue: TriggerIssue, config: GatewayConfig) -> String {
        guard case .config = issue.origin, let file = config.file else { return issue.description }
        let location = config.document.flatMap { GatewayConfig.nearestLocation(of: issue.path, in: $0) }
        return (location.map { "\(file):\($0.line):\($0.column): " } ?? "\(file): ") + issue.description
    }
}
