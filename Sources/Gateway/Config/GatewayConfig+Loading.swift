import FoundationEssentials
import GeotriggerCore

extension GatewayConfig {
    /// Reads the JSON5 config file at `path`: every problem (syntax, unknown or duplicate keys,
    /// wrong types, out-of-range values) is reported at once, each with file, line, column and key path.
    /// Relative paths in the config resolve against the file's folder.
    public static func load(file path: String) throws(ConfigErrors) -> GatewayConfig {
        guard let data = FileManager.default.contents(atPath: path) else {
            let why = FileManager.default.fileExists(atPath: path) ? "it is not readable" : "no such file"
            throw ConfigErrors(errors: [ConfigError(file: path, location: nil, path: "$", message: "cannot read the config file: \(why)")])
        }
        let bytes = [UInt8](data)
        let document: JSONDocument
        do {
            document = try JSONReader.parse(bytes, file: path, dialect: .json5)
        } catch {
            throw ConfigErrors(errors: [ConfigError(file: path, location: error.location, path: "$", message: error.message)])
        }
        var config = try decode(document)
        config.file = path
        config.document = document
        if let slash = path.lastIndex(of: "/") {
            config.folder = slash == path.startIndex ? "/" : String(path[..<slash])
        }
        return config
    }

    /// Decodes a parsed config document (see ``load(file:)``).
    public static func decode(_ document: JSONDocument) throws(ConfigErrors) -> GatewayConfig {
        var decoder = ConfigDecoder()
        let config = GatewayConfig(decoding: document.value, with: &decoder)
        guard decoder.problems.isEmpty else {
            throw ConfigErrors(errors: decoder.problems.map {
                ConfigError(file: document.file, location: nearestLocation(of: $0.path, in: document), path: $0.path.pathString, message: $0.message)
            })
        }
        return config
    }

    /// Where `path` was written, or its closest written ancestor (a missing key: its object).
    static func nearestLocation(of path: [JSONPathComponent], in document: JSONDocument) -> SourceLocation? {
        var path = path
        while true {
            if let location = document.location(of: path) { return location }
            if path.isEmpty { return nil }
            path.removeLast()
        }
    }

    init(decoding value: JSONValue, with d: inout ConfigDecoder) {
        self.init()
        let top = ["gateway", "broker", "remote", "input", "fences", "output", "homeassistant", "journal", "outbox", "runtime", "feeds", "triggers"]
        guard let root = d.object(value, at: [], allowed: Set(top)) else { return }

        if let v = root["gateway"], let o = d.object(v, at: [.key("gateway")], allowed: ["id", "database", "fences", "durability", "hibernateAfter", "forgetAfter", "commitInterval"]) {
            let p: [JSONPathComponent] = [.key("gateway")]
            if let id = d.string(o, "id", at: p), let id {
                if let problem = DeviceID.problem(with: id) ?? (id.contains("/") ? "it must be one topic level (no '/')" : nil) {
                    d.report(p + [.key("id")], "not a usable gateway id: \(problem)")
                } else {
                    gateway.id = id
                }
            }
            if let s = d.string(o, "database", at: p), let s { gateway.database = s }
            if let s = d.string(o, "fences", at: p), let s { gateway.fences = s }
            if let x = d.choice(o, "durability", at: p, as: Durability.self) { gateway.durability = x }
            if let x = d.number(o, "hibernateAfter", at: p, range: 1...Double.infinity) { gateway.hibernateAfter = x }
            if let x = d.number(o, "forgetAfter", at: p, range: 1...Double.infinity) { gateway.forgetAfter = x }
            if let x = d.number(o, "commitInterval", at: p, range: 0...5) { gateway.commitInterval = x }
        }
        if let v = root["broker"] {
            broker = Broker(decoding: v, at: [.key("broker")], with: &d) ?? broker
        }
        if let v = root["remote"], v != .null {
            remote = Broker(decoding: v, at: [.key("remote")], with: &d)
        }
        if let v = root["input"], let o = d.object(v, at: [.key("input")], allowed: ["maxPayload", "maxFutureSkew", "maxAccuracy", "maxDevices", "maxDevicesPerUser", "maxEventsPerDevice"]) {
            let p: [JSONPathComponent] = [.key("input")]
            if let x = d.integer(o, "maxPayload", at: p, range: 64...268_435_455) { input.maxPayload = x }
            if let x = d.number(o, "maxFutureSkew", at: p, range: 0...Double.infinity) { input.maxFutureSkew = x }
            if let x = d.number(o, "maxAccuracy", at: p, range: 0...Double.infinity) { input.maxAccuracy = x }
            if let x = d.integer(o, "maxDevices", at: p, range: 1...100_000_000) { input.maxDevices = x }
            if let x = d.integer(o, "maxDevicesPerUser", at: p, range: 1...100_000_000) { input.maxDevicesPerUser = x }
            if let x = d.integer(o, "maxEventsPerDevice", at: p, range: 1...Int(Int32.max)) { input.maxEventsPerDevice = x }
        }
        if let v = root["fences"], let o = d.object(v, at: [.key("fences")], allowed: ["maxVertices"]) {
            if let x = d.integer(o, "maxVertices", at: [.key("fences")], range: 4...Int(Int32.max)) { fences.maxVertices = x }
        }
        if let v = root["output"], let o = d.object(v, at: [.key("output")], allowed: ["prefix", "qos", "owntracks", "statusInterval", "stateInterval", "occupancy", "metricsFile", "trackMemory"]) {
            let p: [JSONPathComponent] = [.key("output")]
            if let s = d.string(o, "prefix", at: p), let s {
                if s.isEmpty || s.contains("+") || s.contains("#") || s.hasSuffix("/") {
                    d.report(p + [.key("prefix")], "expected topic levels without '+', '#' or a trailing '/', found \(JSONValue.string(s).serialized())")
                } else {
                    output.prefix = s
                }
            }
            if let x = d.integer(o, "qos", at: p, range: 0...1) { output.qos = x }
            if let x = d.bool(o, "owntracks", at: p) { output.owntracks = x }
            if let x = d.number(o, "statusInterval", at: p, range: 0.1...Double.infinity) { output.statusInterval = x }
            if let x = d.number(o, "stateInterval", at: p, range: 0...Double.infinity) { output.stateInterval = x }
            if let x = d.bool(o, "occupancy", at: p) { output.occupancy = x }
            if let x = d.integer(o, "trackMemory", at: p, range: 0...(1 << 40)) { output.trackMemory = x }
            if let s = d.string(o, "metricsFile", at: p, nullable: true) {
                if s?.isEmpty == true || s?.hasSuffix("/") == true {
                    d.report(p + [.key("metricsFile")], "expected the path of a file or null, found \(JSONValue.string(s ?? "").serialized())")
                } else {
                    output.metricsFile = s
                }
            }
        }
        if let v = root["homeassistant"], let o = d.object(v, at: [.key("homeassistant")], allowed: ["discovery", "prefix"]) {
            let p: [JSONPathComponent] = [.key("homeassistant")]
            if let x = d.bool(o, "discovery", at: p) { homeassistant.discovery = x }
            if let s = d.string(o, "prefix", at: p), let s {
                if s.isEmpty || s.contains("+") || s.contains("#") || s.hasPrefix("/") || s.hasSuffix("/") {
                    d.report(p + [.key("prefix")], "expected topic levels without '+', '#' or a leading or trailing '/', found \(JSONValue.string(s).serialized())")
                } else {
                    homeassistant.prefix = s
                }
            }
        }
        if let v = root["journal"], let o = d.object(v, at: [.key("journal")], allowed: ["retentionDays", "maxRows"]) {
            if let x = d.number(o, "retentionDays", at: [.key("journal")], range: 0...Double.infinity) { journal.retentionDays = x }
            if let x = d.integer(o, "maxRows", at: [.key("journal")], range: 1...Int(Int32.max)) { journal.maxRows = x }
        }
        if let v = root["runtime"], let o = d.object(v, at: [.key("runtime")], allowed: ["maxFences", "maxBytes"]) {
            if let x = d.integer(o, "maxFences", at: [.key("runtime")], range: 0...10_000_000) { runtime.maxFences = x }
            if let x = d.integer(o, "maxBytes", at: [.key("runtime")], range: 0...(1 << 40)) { runtime.maxBytes = x }
        }
        if let v = root["outbox"], let o = d.object(v, at: [.key("outbox")], allowed: ["cap", "inflight"]) {
            if let x = d.integer(o, "cap", at: [.key("outbox")], range: 1...Int(Int32.max)) { outbox.cap = x }
            if let x = d.integer(o, "inflight", at: [.key("outbox")], range: 1...65535) { outbox.inflight = x }
        }
        if let v = root["feeds"] {
            if case .array(let items) = v {
                feeds = []
                var names: Set<String> = []
                for (i, item) in items.enumerated() {
                    guard let feed = Feed(decoding: item, at: [.key("feeds"), .index(i)], with: &d) else { continue }
                    if !names.insert(feed.name).inserted {
                        d.report([.key("feeds"), .index(i), .key("name")], "duplicate feed name \(JSONValue.string(feed.name).serialized())")
                    }
                    feeds.append(feed)
                }
            } else {
                d.report([.key("feeds")], "expected an array of feeds, found \(v.typeName)")
            }
        }
        if let v = root["triggers"] {
            if case .array(let items) = v {
                triggers = []
                for (i, item) in items.enumerated() {
                    if case .object(let o) = item {
                        triggers?.append(o)
                    } else {
                        d.report([.key("triggers"), .index(i)], "expected a trigger object, found \(item.typeName)")
                    }
                }
            } else {
                d.report([.key("triggers")], "expected an array of triggers, found \(v.typeName)")
            }
        }
    }
}

extension GatewayConfig.Broker {
    init?(decoding value: JSONValue, at p: [JSONPathComponent], with d: inout ConfigDecoder) {
        let keys: Set<String> = ["host", "port", "hosts", "clientId", "protocol", "sessionExpiry", "username", "passwordFile", "tls", "keepalive"]
        guard let o = d.object(value, at: p, allowed: keys) else { return nil }
        self.init()
        if let s = d.string(o, "host", at: p), let s { host = s }
        if let x = d.integer(o, "port", at: p, range: 1...65535) { port = x }
        if let v = o["hosts"] {
            if case .array(let items) = v, !items.isEmpty {
                for (i, item) in items.enumerated() {
                    if case .string(let s) = item, let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]),
                        (1...65535).contains(port), colon != s.startIndex
                    {
                        hosts.append(s)
                    } else {
                        d.report(p + [.key("hosts"), .index(i)], "expected \"host:port\", found \(d.describe(item))")
                    }
                }
            } else {
                d.report(p + [.key("hosts")], "expected a non-empty array of \"host:port\" strings, found \(d.describe(v))")
            }
        }
        if let s = d.string(o, "clientId", at: p, nullable: true) { clientId = s }
        if let x = d.choice(o, "protocol", at: p, as: GatewayConfig.MQTTProtocol.self) { self.protocol = x }
        if let x = d.number(o, "sessionExpiry", at: p, range: 0...4_294_967_295) { sessionExpiry = x }
        if let s = d.string(o, "username", at: p, nullable: true) { username = s }
        if let s = d.string(o, "passwordFile", at: p, nullable: true) { passwordFile = s }
        if let x = d.integer(o, "keepalive", at: p, range: 5...65535) { keepalive = x }
        if let v = o["tls"], v != .null, let t = d.object(v, at: p + [.key("tls")], allowed: ["ca", "cert", "key"]) {
            let tp = p + [.key("tls")]
            let cert = d.string(t, "cert", at: tp, nullable: true) ?? nil
            let key = d.string(t, "key", at: tp, nullable: true) ?? nil
            if (cert == nil) != (key == nil) { d.report(tp, "cert and key go together: give both or neither") }
            if let ca = d.string(t, "ca", at: tp), let ca {
                tls = GatewayConfig.TLS(ca: ca, cert: cert, key: key)
            } else {
                d.report(tp + [.key("ca")], "expected the CA certificate file (a string)")
            }
        }
    }
}

extension GatewayConfig.Feed {
    init?(decoding value: JSONValue, at p: [JSONPathComponent], with d: inout ConfigDecoder) {
        guard case .object(let peek) = value else {
            d.report(p, "expected a feed object, found \(value.typeName)")
            return nil
        }
        let isGPSD = peek["gpsd"] != nil
        let allowed: Set<String> = isGPSD ? ["name", "gpsd", "device", "republish"] : ["name", "topic", "format", "shard", "userLevel"]
        guard let o = d.object(value, at: p, allowed: allowed) else { return nil }
        guard let name = d.string(o, "name", at: p) ?? nil, !name.isEmpty else {
            if o["name"] == nil { d.report(p, "a feed needs a \"name\"") }
            return nil
        }
        if isGPSD {
            var host = "127.0.0.1", port = 2947
            if let g = d.object(o["gpsd"]!, at: p + [.key("gpsd")], allowed: ["host", "port"]) {
                if let s = d.string(g, "host", at: p + [.key("gpsd")]), let s { host = s }
                if let x = d.integer(g, "port", at: p + [.key("gpsd")], range: 1...65535) { port = x }
            }
            var device: String?
            if let s = d.string(o, "device", at: p), let s {
                if let problem = DeviceID.problem(with: s) { d.report(p + [.key("device")], problem) } else { device = s }
            }
            self = .gpsd(name: name, host: host, port: port, device: device, republish: d.bool(o, "republish", at: p) ?? false)
        } else {
            guard let topic = d.string(o, "topic", at: p) ?? nil else {
                if o["topic"] == nil { d.report(p, "an MQTT feed needs a \"topic\" (or \"gpsd\" for a gpsd feed)") }
                return nil
            }
            var plusLevels: Int?
            do {
                let filter = try TopicFilter(topic)
                if !filter.hasWildcard { d.report(p + [.key("topic")], "the topic filter needs a '+' or '#' level: the device id is what the wildcards match") }
                plusLevels = topic.split(separator: "/", omittingEmptySubsequences: false).count { $0 == "+" }
            } catch {
                d.report(p + [.key("topic")], error.detail)
            }
            guard let format = d.choice(o, "format", at: p, as: PayloadFormat.self) else {
                if o["format"] == nil { d.report(p, "an MQTT feed needs a \"format\" (owntracks or json)") }
                return nil
            }
            var shard: FeedShard?
            if let text = d.string(o, "shard", at: p, nullable: true), let text {
                shard = FeedShard(text)
                if shard == nil {
                    d.report(p + [.key("shard")], "expected \"K/N\": shard K of N with N >= 1 and 0 <= K < N (e.g. \"0/3\"), found \(JSONValue.string(text).serialized())")
                }
            }
            var userLevel: Int?
            if o["userLevel"] != nil, o["userLevel"] != .null, let x = d.integer(o, "userLevel", at: p, range: 1...100) {
                if let plusLevels, x > plusLevels {
                    d.report(p + [.key("userLevel")], "expected the number (1-based) of a '+' level of the topic, which has \(plusLevels), found \(x)")
                } else {
                    userLevel = x
                }
            }
            self = .mqtt(name: name, topic: topic, format: format, shard: shard, userLevel: userLevel)
        }
    }
}
