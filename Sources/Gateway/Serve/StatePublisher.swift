import MQTT
import Synchronization

/// Publishes retained device states (`PREFIX/devices/DEVICE/state`) and remembers them, so
/// that every (re)connect can publish them all again (DESIGN.md: "On every (re)connect ...
/// republish retained device states").
final class StatePublisher: Sendable {
    /// Nil in `bench store`: states are only remembered.
    let client: MQTTClient?
    let prefix: String
    let logger: Logger
    private let states = Mutex<[String: [UInt8]]>([:])

    init(client: MQTTClient?, prefix: String, logger: Logger) {
        self.client = client
        self.prefix = prefix
        self.logger = logger
    }

    func topic(_ device: String) -> String { "\(prefix)/devices/\(device)/state" }

    /// Publishes `payload` retained for `device`; nil clears the retained message (forgotten device).
    func publish(device: String, payload: [UInt8]?) {
        states.withLock { $0[device] = payload }
        send(device: device, payload: payload ?? [])
    }

    /// Publishes every known state again (after a connect).
    func republishAll() {
        let all = states.withLock { $0 }
        for (device, payload) in all { send(device: device, payload: payload) }
    }

    var count: Int { states.withLock { $0.count } }

    private func send(device: String, payload: [UInt8]) {
        guard let client else { return }
        do {
            try client.publish(topic: topic(device), payload: payload, qos: .atLeastOnce, retain: true)
        } catch {
            logger.debug("device state not published now (sent again on reconnect): \(error)", ["device.id": device])
        }
    }
}
