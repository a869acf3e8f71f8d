import GeotriggerCore

/// The gateway's configuration: every key of docs/configuration.md "The config file", with its default.
///
/// Relative paths are resolved against the config file's folder when loaded from a file
/// (against the working directory without one).
public struct GatewayConfig: Sendable {
    public struct Gateway: Sendable {
        /// The gateway id, used in topics and as the default device id of the gpsd feed.
        public var id = "gw-1"
        public var database = "geotrigger.db"
        public var fences = "fences"
        public var durability = Durability.normal
        /// Seconds without updates after which a device's monitor leaves memory (state kept on disk).
        public var hibernateAfter: Double = 600
        /// Seconds without updates after which a device is forgotten and its retained state cleared.
        public var forgetAfter: Double = 2_592_000
        /// Seconds a group commit waits after the previous one began, gathering company
        /// (docs/configuration.md "Durability"): one transaction for many decisions at fleet rates; 0: each commit
        /// starts as soon as the previous one ended.
        public var commitInterval: Double = 0.5
    }

    public enum Durability: String, Sendable, CaseIterable {
        /// `synchronous=NORMAL`: survives a process kill.
        case normal
        /// `synchronous=FULL`: survives power loss.
        case full
    }

    public enum MQTTProtocol: String, Sendable, CaseIterable {
        case v5
        case v311
    }

    /// TLS files (paths): the CA, and optionally a client certificate and key.
    public struct TLS: Sendable, Equatable {
        public var ca: String
        public var cert: String?
        public var key: String?
    }

    /// A broker connection: `broker`, and `remote` for delivery `remote`/`both`.
    public struct Broker: Sendable {
        public var host = "127.0.0.1"
        public var port = 1883
        /// `host:port` addresses tried in turn on every reconnect (instead of host and port).
        public var hosts: [String] = []
        /// Nil: `geotrigger-` + gateway id (`-remote` appended for the remote broker).
        public var clientId: String?
        public var `protocol` = MQTTProtocol.v5
        public var sessionExpiry: Double = 86400
        public var username: String?
        public var passwordFile: String?
        public var tls: TLS?
        public var keepalive = 30
    }

    public struct Input: Sendable {
        public var maxPayload = 65536
        public var maxFutureSkew: Double = 300
        /// Devices tracked at most; updates of further devices are dropped as `tooManyDevices`.
        public var maxDevices = 100_000
        /// Devices of one broker user (a feed's `userLevel`) tracked at most; updates of that
        /// user's further device ids are dropped as `tooManyDevices`.
        public var maxDevicesPerUser = 1000
        /// Updates whose accuracy (metres) is larger are dropped as `outOfRange`.
        public var maxAccuracy: Double = 10000
        /// Events per device per minute of fix time, and 10 times that per minute of the
        /// gateway's clock (``EventRateLimiter``); more are counted as `eventRateLimited`,
        /// neither journaled nor published.
        public var maxEventsPerDevice = 120
    }

    public struct Fences: Sendable {
        /// A fence (file or runtime) with more vertices (positions) is rejected.
        public var maxVertices = 100_000
    }

    public struct Output: Sendable {
        public var prefix = "geotriggers"
        public var qos = 1
        public var owntracks = false
        public var statusInterval: Double = 30
        public var stateInterval: Double = 10
        /// Retained occupancy per (trigger, layer, fence): `PREFIX/occupancy/TRIGGER/LAYER/FENCE`.
        public var occupancy = false
        /// The Prometheus textfile (docs/metrics.md), nil: none; relative to the config's folder.
        public var metricsFile: String?
        /// Bytes the devices' recent tracks (the console's `track` query) may hold together,
        /// split evenly over the device shards; 0: no tracks are kept.
        public var trackMemory = 134_217_728
    }

    /// Home Assistant MQTT discovery (docs/occupancy-and-home-assistant.md).
    public struct HomeAssistant: Sendable {
        public var discovery = false
        /// Home Assistant's discovery prefix (its MQTT integration's setting).
        public var prefix = "homeassistant"
    }

    public struct Journal: Sendable {
        public var retentionDays: Double = 30
        /// Rows the journal keeps at most; past it the oldest delivered ones are deleted.
        public var maxRows = 5_000_000
    }

    /// Fences published at run time (`PREFIX/fences/LAYER/FENCE_ID`).
    public struct Runtime: Sendable {
        /// Runtime fences kept at most; a new one beyond is rejected on its error topic.
        public var maxFences = 10_000
        /// The runtime fences' payloads together, in bytes (64 MiB); a new or replaced fence
        /// that would pass it is rejected on its error topic, and a start loads only what fits.
        public var maxBytes = 64 << 20
        /// The largest runtime fence payload, in bytes (1 MiB; docs/control-plane.md
        /// "Runtime fences", **Budget**).
        public static let maxPayload = 1 << 20
    }

    public struct Outbox: Sendable {
        public var cap = 1_000_000
        public var inflight = 500
    }

    /// A source of updates.
    public enum Feed: Sendable {
        /// An MQTT topic filter and its payload format; with `shard`, only the devices of that
        /// shard are taken (`feeds[].shard: "K/N"`); `userLevel`: which wildcard level (1-based)
        /// names the publishing broker user (`feeds[].userLevel`; nil: 1 for `owntracks`, none
        /// for `json`).
        case mqtt(name: String, topic: String, format: PayloadFormat, shard: FeedShard? = nil, userLevel: Int? = nil)
        /// The gateway's own receiver through gpsd.
        case gpsd(name: String, host: String, port: Int, device: String?, republish: Bool)

        public var name: String {
            switch self {
            case .mqtt(let name, _, _, _, _), .gpsd(let name, _, _, _, _): name
            }
        }
    }

    public var gateway = Gateway()
    public var broker = Broker()
    public var remote: Broker?
    public var input = Input()
    public var fences = Fences()
    public var output = Output()
    public var homeassistant = HomeAssistant()
    public var journal = Journal()
    public var runtime = Runtime()
    public var outbox = Outbox()
    public var feeds: [Feed] = [
        .mqtt(name: "owntracks", topic: "owntracks/+/+", format: .owntracks),
        .mqtt(name: "devices", topic: "devices/+/location", format: .json),
    ]
    /// The `triggers` array as written (validated by the engine's trigger model), or nil when the
    /// key is missing (one trigger per layer).
    public var triggers: [JSONObject]?
    /// The config file, if one was read (messages name it).
    public var file: String?
    /// The folder relative paths resolve against.
    public var folder = "."
    /// The parsed file, to locate problems found later (trigger keys) by line and column.
    public var document: JSONDocument?

    public init() {}

    /// `path` resolved against the config file's folder.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") || folder == "." ? path : folder + "/" + path
    }

    /// The client id used for `broker` (`remote: true` for the remote broker).
    public func clientID(remote isRemote: Bool) -> String {
        let b = isRemote ? (remote ?? broker) : broker
        return b.clientId ?? "geotrigger-\(gateway.id)" + (isRemote ? "-remote" : "")
    }
}
