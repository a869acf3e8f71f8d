/// Everything `MQTTClient` needs to reach a broker. A plain value: build it, then hand it to
/// `MQTTClient.init(_:)`; the client never changes it.
public struct MQTTConfiguration: Sendable, Equatable {
    /// The MQTT protocol version spoken to the broker.
    public enum ProtocolVersion: Sendable, Equatable {
        /// MQTT 5: session expiry, PUBACK reason codes, response topic and correlation data.
        case v5
        /// MQTT 3.1.1: the session lives as the broker's `persistent_client_expiration` says.
        case v311
    }

    /// Files for a TLS connection (PEM). `ca` verifies the broker; `cert` and `key` (both or
    /// neither) authenticate this client.
    public struct TLS: Sendable, Equatable {
        /// The CA certificate file the broker's certificate must chain to.
        public var ca: String
        /// This client's certificate file, if the broker asks for one.
        public var cert: String?
        /// The private key file of `cert`.
        public var key: String?

        /// TLS settings from file paths.
        public init(ca: String, cert: String? = nil, key: String? = nil) {
            self.ca = ca
            self.cert = cert
            self.key = key
        }
    }

    /// The last will: published by the broker when this client's connection ends without a
    /// DISCONNECT (socket dropped, keepalive missed).
    public struct Will: Sendable, Equatable {
        /// The topic the will goes to.
        public var topic: String
        /// The will's payload.
        public var payload: [UInt8]
        /// The will's QoS.
        public var qos: MQTTQoS
        /// Whether the broker retains the will.
        public var retain: Bool

        /// A will with a byte payload.
        public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }

        /// A will with a text payload (sent as UTF-8).
        public init(topic: String, payload: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
            self.init(topic: topic, payload: Array(payload.utf8), qos: qos, retain: retain)
        }
    }

    /// How long to wait before reconnecting: `minimum` after a connection that worked, then
    /// doubling per failed attempt up to `maximum`.
    public struct Backoff: Sendable, Equatable {
        /// The first delay.
        public var minimum: Duration
        /// The longest delay.
        public var maximum: Duration

        /// A backoff from `minimum` doubling to `maximum`.
        public init(minimum: Duration = .seconds(1), maximum: Duration = .seconds(30)) {
            self.minimum = minimum
            self.maximum = max(minimum, maximum)
        }

        /// The delay before attempt number `attempt` (0 for the first retry).
        public func delay(attempt: Int) -> Duration {
            var delay = minimum
            for _ in 0..<min(attempt, 62) {
                delay = delay * 2
                if delay >= maximum { return maximum }
            }
            return min(delay, maximum)
        }
    }

    /// One broker address.
    public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        /// Host name or address.
        public var host: String
        /// TCP port.
        public var port: Int

        /// An address from its host and port.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        /// `host:port`.
        public var description: String { "\(host):\(port)" }
    }

    /// Broker host name or address (the first one tried when `hosts` is empty).
    public var host: String
    /// Broker port (1883 plain, usually 8883 with TLS).
    public var port: Int
    /// Broker addresses tried in turn: the first connect uses the first one, every reconnect
    /// attempt (after a lost connection or a failed attempt) the next one, wrapping around, so
    /// a client moves to a surviving node of a cluster. Empty: only `host` and `port`.
    public var hosts: [Endpoint]
    /// The client id. Keep it stable so the broker finds this client's session again after a
    /// restart. `nil` lets the broker assign one; allowed only with `cleanStart`.
    public var clientId: String?
    /// The protocol version.
    public var protocolVersion: ProtocolVersion
    /// MQTT v5 session expiry in seconds, sent in CONNECT: how long the broker keeps the
    /// session (subscriptions and queued QoS 1 messages) after the connection ends.
    /// 0 ends it with the connection; `UInt32.max` never expires it. Ignored for v3.1.1.
    public var sessionExpiry: UInt32
    /// Start with a fresh session (MQTT v5 clean start, v3.1.1 clean session). Off by
    /// default, so a session outlives a restart of this client.
    public var cleanStart: Bool
    /// User name, or `nil` for none.
    public var username: String?
    /// Password (used only with `username`).
    public var password: String?
    /// TLS files, or `nil` for a plain TCP connection.
    public var tls: TLS?
    /// Keepalive in seconds: 0 (off) or 5...65535.
    public var keepalive: Int
    /// The last will, or `nil`.
    public var will: Will?
    /// Reconnect delays.
    public var reconnect: Backoff
    /// Outgoing QoS 1 window: how many publishes may await their PUBACK at once (libmosquitto
    /// `MOSQ_OPT_SEND_MAXIMUM`, default there 20; 100-1000 is fastest). For v5 the broker's
    /// "receive maximum" in CONNACK lowers it (mosquitto: `max_inflight_messages`).
    public var inflightWindow: Int
    /// How many received messages wait for the consumer before the network thread stops
    /// reading from the broker (back-pressure; nothing is ever dropped).
    public var inboundCapacity: Int
    /// How many payload bytes the received messages waiting for the consumer may hold before
    /// the network thread stops reading (one message is always taken, whatever its size):
    /// with large payloads (1 MiB runtime fences retained by the thousand) a bound in messages
    /// alone would let the queue hold gigabytes. `Int.max`: no bound but `inboundCapacity`.
    public var inboundBytes = Int.max
    /// MQTT v5 Maximum Packet Size sent in CONNECT: the largest packet this client accepts.
    /// The broker never sends it a larger one (mosquitto drops such a message for this client
    /// only). `nil`: no limit announced. Ignored for v3.1.1, which has no such property.
    public var maximumPacketSize: UInt32?
    /// Read a plain TCP connection a buffer at a time: one system call for the packets that
    /// arrived together, instead of libmosquitto's three or more per packet
    /// (``BufferedReads``). Ignored with TLS, and in a process that does not link
    /// `ReadInterposition`.
    public var bufferedReads = true

    /// A configuration with the defaults of the `broker` keys (docs/configuration.md "The config file").
    public init(
        host: String = "127.0.0.1",
        port: Int = 1883,
        hosts: [Endpoint] = [],
        clientId: String?,
        protocolVersion: ProtocolVersion = .v5,
        sessionExpiry: UInt32 = 86_400,
        cleanStart: Bool = false,
        username: String? = nil,
        password: String? = nil,
        tls: TLS? = nil,
        keepalive: Int = 30,
        will: Will? = nil,
        reconnect: Backoff = Backoff(),
        inflightWindow: Int = 100,
        inboundCapacity: Int = 1024
    ) {
        self.host = host
        self.port = port
        self.hosts = hosts
        self.clientId = clientId
        self.protocolVersion = protocolVersion
        self.sessionExpiry = sessionExpiry
        self.cleanStart = cleanStart
        self.username = username
        self.password = password
        self.tls = tls
        self.keepalive = keepalive
        self.will = will
        self.reconnect = reconnect
        self.inflightWindow = inflightWindow
        self.inboundCapacity = inboundCapacity
    }

    /// The addresses in the order they are tried: `hosts`, or `host:port` alone.
    public var endpoints: [Endpoint] {
        hosts.isEmpty ? [Endpoint(host: host, port: port)] : hosts
    }
}
