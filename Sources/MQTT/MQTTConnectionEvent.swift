/// What happened to the broker connection. Reported on libmosquitto's network thread through
/// `MQTTClient`'s `onConnectionEvent` handler and its `connectionEvents` stream.
public enum MQTTConnectionEvent: Sendable, Equatable {
    /// The broker accepted the connection (CONNACK success). The client has already asked
    /// for its subscriptions again; publish `started` and retained state now.
    /// `sessionPresent`: the broker still had this client's session.
    case connected(sessionPresent: Bool)
    /// The broker refused the connection: the CONNACK reason code and its text
    /// (v5 `mosquitto_reason_string`, v3.1.1 `mosquitto_connack_string`), e.g.
    /// 0x86 "Bad user name or password". The client retries after the backoff.
    case refused(code: Int32, reason: String)
    /// A connection attempt failed before any CONNACK (broker unreachable, TLS handshake,
    /// name lookup...). The client retries after the backoff.
    case connectFailed(MosquittoError)
    /// An accepted connection ended. `code` is 0 when this client asked for it (`stop()`);
    /// otherwise a libmosquitto `MOSQ_ERR_*` code below 0x80 (e.g. 7 "The connection was
    /// lost.", 19 keepalive) or a v5 DISCONNECT reason code sent by the broker, 0x80 and
    /// above (e.g. 0x8E "Session taken over"); `reason` is its text. The client reconnects
    /// by itself unless it is stopping.
    case disconnected(code: Int32, reason: String)
    /// The client waits this long before its next connection attempt.
    case reconnecting(after: Duration)
    /// The broker answered a SUBSCRIBE: the filters of that request and one code each
    /// (the granted QoS 0-2, or a v5 failure reason 0x80 and above, e.g. 0x87 not authorized).
    case subscribed(filters: [String], codes: [Int32])
}
