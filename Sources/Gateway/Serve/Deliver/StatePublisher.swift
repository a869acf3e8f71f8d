import GeotriggerCore
import MQTT
import Synchronization

/// Publishes the gateway's retained topics (device states `PREFIX/devices/DEVICE/state`,
/// occupancy, Home Assistant discovery) and remembers them, so that every (re)connect can
/// publish them all again (README "Device state": "republished on every (re)connect"; occupancy
/// likewise on every connect).
///
/// At most `window` messages are with libmosquitto at a time (QoS 1, waiting for their PUBACK).
/// The others wait here as "topic T is due", and a topic whose payload changes again before
/// its turn goes out once, with its newest payload. Without the window, 10,000 devices
/// appearing at once queued 14,000 copies of their states in libmosquitto behind the broker's
/// receive maximum (3.8 MB at the benchmark's peak); with it the queue holds topic names.
///
/// Messages are handed to libmosquitto on its network thread (``MQTTClient/perform(_:)``),
/// where the acknowledgements arrive too: the committer's thread only marks a topic as due.
package final class StatePublisher: Sendable {
    /// Hands one message to libmosquitto and returns its message id.
    typealias Send = @Sendable (_ topic: String, _ payload: [UInt8]) throws -> Int32
    /// Runs a job where `send` should be called (the network thread).
    typealias Perform = @Sendable (@escaping @Sendable () -> Void) -> Void

    let prefix: String
    let logger: Logger
    let window: Int
    /// With `homeassistant.discovery`: a device's tracker config and attributes go with its state.
    let discovery: HomeAssistantDiscovery?
    /// With `output.occupancy`: the devices in each fence, from the device publications.
    let occupancyEnabled: Bool
    let occupancy = LeveledMutex(OccupancyBook(), level: .occupancy)
    /// Nil in `bench store`: states are only remembered.
    private let send: Send?
    private let perform: Perform
    private let book = LeveledMutex(Book(), level: .statePublisherBook)
    /// A pump job is handed to `perform` and has not started yet.
    private let pumpScheduled = Atomic<Bool>(false)

    private struct Book: ~Copyable {
        /// The newest payload of every retained topic (a cleared topic is absent).
        var payloads: [String: [UInt8]] = [:]
        /// Topics whose newest payload has not been handed to libmosquitto, oldest first
        /// (`due[head...]`), and the same as a set.
        var due: [String] = []
        var head = 0
        var dueSet: Set<String> = []
        /// Message id -> topic, for the messages libmosquitto holds.
        var inflight: [Int32: String] = [:]

        mutating func markDue(_ topic: String) {
            if dueSet.insert(topic).inserted { due.append(topic) }
        }

        mutating func nextDue() -> String? {
            guard head < due.count else { return nil }
            let topic = due[head]
            head += 1
            if head == due.count {
                due.removeAll(keepingCapacity: due.count <= 1024)
                head = 0
            } else if head >= 1024 && head * 2 >= due.count {
                due.removeFirst(head)
                head = 0
            }
            dueSet.remove(topic)
            return topic
        }
    }

    /// Publishing through `client` (nil: only remembering states).
    package convenience init(client: MQTTClient?, prefix: String, logger: Logger, window: Int = 64,
                     discovery: HomeAssistantDiscovery? = nil, occupancy: Bool = false) {
        guard let client else {
            self.init(prefix: prefix, logger: logger, window: window, send: nil, discovery: discovery, occupancy: occupancy)
            return
        }
        self.init(prefix: prefix, logger: logger, window: window,
                  send: { topic, payload in try client.publish(topic: topic, payload: payload, qos: .atLeastOnce, retain: true) },
                  perform: { client.perform($0) }, discovery: discovery, occupancy: occupancy)
    }

    /// Publishing through any `send` (the tests' fake broker), called in the jobs given to
    /// `perform` (default: right away).
    init(prefix: String, logger: Logger, window: Int, send: Send?, perform: @escaping Perform = { $0() },
         discovery: HomeAssistantDiscovery? = nil, occupancy: Bool = false) {
        self.prefix = prefix
        self.logger = logger
        self.window = max(1, window)
        self.send = send
        self.perform = perform
        self.discovery = discovery
        self.occupancyEnabled = occupancy
        if let discovery { publish(topic: discovery.gatewayConfigTopic, payload: discovery.gatewayConfig()) }
    }

    func topic(_ device: String) -> String { "\(prefix)/devices/\(device)/state" }

    /// Publishes a device's state and, with discovery, its tracker's config (the first time in
    /// this run) and attributes; a forgotten device's topics are cleared. Occupancy follows
    /// its stays.
    func publish(_ publication: DevicePublication) {
        book.withLock { book in
            set(topic(publication.device), publication.state, in: &book)
            guard let discovery else { return }
            let config = discovery.trackerConfigTopic(device: publication.device)
            if publication.state == nil {
                set(config, nil, in: &book)
                set(discovery.attributesTopic(device: publication.device), nil, in: &book)
            } else {
                if book.payloads[config] == nil { set(config, discovery.trackerConfig(device: publication.device), in: &book) }
                set(discovery.attributesTopic(device: publication.device), publication.attributes, in: &book)
            }
        }
        if occupancyEnabled { occupancy.withLock { $0.update(device: publication.device, stays: publication.stays) } }
        schedulePump()
    }

    /// Publishes `payload` retained on `topic`; nil clears the retained message (and the topic
    /// is no longer published on a connect).
    func publish(topic: String, payload: [UInt8]?) {
        book.withLock { set(topic, payload, in: &$0) }
        schedulePump()
    }

    private func set(_ topic: String, _ payload: [UInt8]?, in book: inout Book) {
        book.payloads[topic] = payload
        if send != nil { book.markDue(topic) }
    }

    /// Has the due topics handed over on the network thread, unless a job for it is queued.
    private func schedulePump() {
        guard send != nil, !pumpScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        perform { [self] in
            // Cleared before the pump looks: a device marked due from now on schedules another.
            pumpScheduled.store(false, ordering: .releasing)
            book.withLock { pump(&$0) }
        }
    }

    /// Publishes every retained topic again (after a connect). libmosquitto sends again what it
    /// held when the connection dropped; those acknowledgements no longer count here, so a
    /// message lost with a session cannot hold a place in the window for ever.
    func republishAll() {
        guard send != nil else { return }
        perform { [self] in
            book.withLock { book in
                book.inflight.removeAll()
                for topic in book.payloads.keys { book.markDue(topic) }
                pump(&book)
            }
        }
    }

    /// Takes the broker's answer to a retained message and sends the next due one. Returns
    /// false when `ack` is not for one of them (an event's, for the outbox).
    func acknowledged(_ ack: MQTTAcknowledgement) -> Bool {
        book.withLock { book in
            guard book.inflight.removeValue(forKey: ack.messageId) != nil else { return false }
            if !ack.isSuccess {
                logger.warning("the broker refused a retained message", ["mqtt.reason": "0x\(String(ack.reasonCode, radix: 16)) \(ack.reason)"])
            }
            pump(&book)
            return true
        }
    }

    /// The retained topics known (published and not cleared).
    var count: Int { book.withLock { $0.payloads.count } }

    /// Messages handed to libmosquitto and not yet acknowledged, and topics waiting for a place.
    var pending: (inflight: Int, due: Int) { book.withLock { ($0.inflight.count, $0.dueSet.count) } }

    /// Hands due messages to libmosquitto while the window has room. Called with the lock held, so
    /// an acknowledgement cannot overtake the message id being recorded (and on the network
    /// thread, where the acknowledgements arrive).
    private func pump(_ book: inout Book) {
        guard let send else { return }
        while book.inflight.count < window, let topic = book.nextDue() {
            do {
                let id = try send(topic, book.payloads[topic] ?? [])
                book.inflight[id] = topic
            } catch {
                logger.debug("retained message not published now (sent again on reconnect)", ["mqtt.topic": topic, "error": "\(error)"])
            }
        }
    }
}

/// What a device's step publishes once it is committed: its retained state and what follows
/// from it (occupancy, Home Assistant attributes). ``StatePublisher/publish(_:)`` takes it.
struct DevicePublication: Sendable {
    var device: String
    /// The state payload; nil: the device was forgotten (its retained topics are cleared).
    var state: [UInt8]?
    /// Its confirmed stays, for occupancy (empty when forgotten, or without `output.occupancy`).
    var stays: [DeviceMonitor.Stay] = []
    /// The Home Assistant attributes payload (with `homeassistant.discovery`).
    var attributes: [UInt8]?

    /// A forgotten device: every retained topic of it is cleared.
    static func forgotten(_ device: String) -> DevicePublication {
        DevicePublication(device: device, state: nil)
    }
}

extension ServeContext {
    /// The publication of `monitor`'s current state, stamped `updated`.
    func publication(of monitor: DeviceMonitor, updated: Double) -> DevicePublication {
        let state = monitor.stateJSON(updated: updated)
        return DevicePublication(
            device: monitor.device, state: state.serializedBytes(),
            stays: config.output.occupancy ? monitor.stays : [],
            attributes: statePublisher.discovery.map { $0.attributes(ofState: state).serializedBytes() })
    }
}
