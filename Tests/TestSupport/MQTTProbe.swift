import Foundation
import MQTT

/// An `MQTTClient` for tests that records everything it sees: connection events, publish
/// acknowledgements and (after `collect()`) received messages, with `poll`-based waits.
public final class MQTTProbe: Sendable {
    /// The client (start, subscribe, publish through it).
    public let client: MQTTClient
    /// Every connection event, in order.
    public let events = Recorder<MQTTConnectionEvent>()
    /// Every acknowledgement, in order.
    public let acknowledgements = Recorder<MQTTAcknowledgement>()
    /// Messages taken from `client.messages` by `collect()`.
    public let messages = Recorder<MQTTMessage>()

    /// Makes the client (not started).
    public init(_ configuration: MQTTConfiguration) throws {
        let events = self.events
        let acknowledgements = self.acknowledgements
        client = try MQTTClient(
            configuration, onConnectionEvent: { events.append($0) },
            onAcknowledgement: { acknowledgements.append($0) })
    }

    /// A probe for the broker at 127.0.0.1:`port` with test-friendly settings: short
    /// reconnect backoff, persistent session unless `cleanStart`.
    public convenience init(
        port: Int, clientId: String, protocolVersion: MQTTConfiguration.ProtocolVersion = .v5,
        configure: (inout MQTTConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = MQTTConfiguration(
            port: port, clientId: clientId, protocolVersion: protocolVersion, sessionExpiry: 3600,
            keepalive: 30, reconnect: .init(minimum: .milliseconds(200), maximum: .seconds(1)))
        configure(&configuration)
        try self.init(configuration)
    }

    /// Starts a task that moves every received message into `messages` (until `stop()`).
    @discardableResult
    public func collect() -> Task<Void, Never> {
        let stream = client.messages
        let messages = self.messages
        return Task.detached {
            for await message in stream { messages.append(message) }
        }
    }

    /// How many `.connected` events were seen.
    public var connectedCount: Int {
        events.all.filter { if case .connected = $0 { true } else { false } }.count
    }

    /// The `sessionPresent` flags of the `.connected` events, in order.
    public var sessionPresentFlags: [Bool] {
        events.all.compactMap { if case .connected(let present) = $0 { present } else { nil } }
    }

    /// Waits until at least `count` `.connected` events were seen.
    public func waitConnected(count: Int = 1, timeout: Duration = .seconds(30)) async -> Bool {
        await poll(timeout: timeout) { connectedCount >= count }
    }

    /// Waits until `count` SUBACKs granted `filter` (code below 0x80).
    public func waitSubscribed(_ filter: String, count: Int = 1, timeout: Duration = .seconds(30)) async -> Bool {
        await poll(timeout: timeout) {
            events.all.filter { event in
                if case .subscribed(let filters, let codes) = event, let index = filters.firstIndex(of: filter) {
                    return index < codes.count && codes[index] < 0x80
                }
                return false
            }.count >= count
        }
    }

    /// Waits until at least `count` `.disconnected` events were seen.
    public func waitDisconnected(count: Int = 1, timeout: Duration = .seconds(30)) async -> Bool {
        await poll(timeout: timeout) {
            events.all.filter { if case .disconnected = $0 { true } else { false } }.count >= count
        }
    }

    /// Waits until `collect()` has taken at least `count` messages.
    public func waitMessages(_ count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        await poll(timeout: timeout) { messages.count >= count }
    }

    /// Waits until every id in `ids` was acknowledged.
    public func waitAcknowledged(_ ids: [Int32], timeout: Duration = .seconds(30)) async -> Bool {
        let wanted = Set(ids)
        return await poll(timeout: timeout) {
            wanted.isSubset(of: Set(acknowledgements.all.map(\.messageId)))
        }
    }

    /// Stops the client (clean disconnect; waits for its network thread).
    public func stop() { client.stop() }
}

/// The `MQTTConnectionEvent`s a probe saw, one a line, for failure messages.
public func describe(_ probe: MQTTProbe) -> String {
    probe.events.all.map { "\($0)" }.joined(separator: "\n")
}
