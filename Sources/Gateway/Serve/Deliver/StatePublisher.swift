import GeotriggerCore
import MQTT
import Synchronization

/// Publishes the gateway's retained topics (device states `PREFIX/devices/DEVICE/state`,
/// occupancy, Home Assistant discovery) and remembers them, so that every (re)connect can
/// publish them all again (docs/topics-and-payloads.md "Device state": "republished on every (re)connect"; occupancy
/// likewise on every connect).
///
/// At most `window` messages are with libmosquitto at a time (QoS 1, waiting for their PUBACK;
/// QoS 0, a trip's progress between its changes, until written to the socket).
/// The others wait here as "topic T is due", and a topic whose payload changes again before
/// its turn goes out once, with its newest payload. Without the window, 10,000 devices
/// appearing at once queued 14,000 copies of their states in libmosquitto behind the broker's
/// receive maximum (3.8 MB at the benchmark's peak); with it the queue holds topic names.
///
/// Messages are handed to libmosquitto on its network thread (``MQTTClient/perform(_:)``),
/// where the acknowledgements arrive too: the committer's thread only marks a topic as due.
/// libmosquitto is never called under the book's lock: one pump at a time takes what is due
/// under it, publishes after releasing it, and records the message ids under it again.
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
    /// Poked when an occupancy topic became due sooner than the ``OccupancyPublisher`` looks,
    /// or the fences changed: its loop waits on it.
    let occupancyChanged = Wakeup()
    /// Nil in `bench store`: states are only remembered.
    private let send: Send?
    /// The same at QoS 0, for the topics published so (``publish(topic:payload:atMostOnce:)``).
    private let sendAtMostOnce: Send?
    private let perform: Perform
    /// Whether the caller is where `send` belongs (the network thread): a job that `perform`
    /// runs anywhere else (in place, while no connection loop runs) leaves the topics due.
    private let onSendThread: @Sendable () -> Bool
    private let book = LeveledMutex(Book(), level: .statePublisherBook)
    /// A pump job is handed to `perform` and has not started yet.
    private let pumpScheduled = Atomic<Bool>(false)

    /// A retained topic as the book keeps it: a device's state by the device id alone (its
    /// topic is made when it is handed over), so that 100,000 devices do not keep 100,000
    /// topic strings beside their ids (~86 bytes each on the heap, heaptrack).
    private enum Retained: Hashable, Sendable {
        /// `PREFIX/devices/DEVICE/state`.
        case state(device: String)
        /// Any other topic (Home Assistant discovery, attributes, occupancy).
        case topic(String)
    }

    private struct Book: ~Copyable {
        /// The newest payload of every device's retained state, by device (a cleared state is
        /// absent).
        var states: [String: [UInt8]] = [:]
        /// The newest payload of every other retained topic (a cleared topic is absent).
        var payloads: [String: [UInt8]] = [:]
        /// The topics among ``payloads`` whose newest payload goes out at QoS 0 (trips' progress
        /// between their changes); empty without open trips.
        var atMostOnce: Set<String> = []
        /// Topics cleared in this run (a forgotten device's, a removed fence's occupancy), the
        /// last ``StatePublisher/clearedKept`` of them, oldest first: every connect clears them
        /// again, so a broker restarted from an old save does not keep them.
        var cleared: Set<Retained> = []
        var clearedOrder = ArrayQueue<Retained>()
        /// Topics whose newest payload has not been handed to libmosquitto, oldest first, and
        /// the same as a set.
        var due = ArrayQueue<Retained>()
        var dueSet: Set<Retained> = []
        /// Message id -> topic, for the messages libmosquitto holds.
        var inflight: [Int32: Retained] = [:]
        /// A pump hands messages over (outside the lock); another caller leaves it to that one,
        /// which looks for due topics again before it ends. So the messages of one topic go
        /// out in the order their payloads were set.
        var pumping = false
        /// Counts ``StatePublisher/republishAll()``s: the message ids of a pump that began
        /// before one are not recorded (the republish forgot every message in flight).
        var epoch = 0
        /// Acknowledgements of ids not in flight that came while a pump published (possible
        /// only when it runs off the network thread): the pump's own ones are applied when it
        /// records its ids. Empty when no pump runs.
        var early: [Int32: MQTTAcknowledgement] = [:]
        /// The buffers of the last pump, reused by the next (a pump owns them while it runs).
        var spare = PumpWork()

        mutating func markDue(_ topic: Retained) {
            if dueSet.insert(topic).inserted { due.append(topic) }
        }

        mutating func nextDue() -> Retained? {
            guard let topic = due.popFirst() else { return nil }
            dueSet.remove(topic)
            return topic
        }

        /// Begins a pump unless one runs (that one goes on for the caller and looks for due
        /// topics again before it ends): nil then, or when nothing due fits in the window.
        mutating func beginPump(window: Int) -> PumpWork? {
            guard !pumping else { return nil }
            pumping = true
            var work = spare
            spare = PumpWork()
            return fillDue(&work, window: window) ? work : nil
        }

        /// Records the message ids `work` got (unless a republish came since it began) and
        /// returns the refusals among the acknowledgements that came before them.
        mutating func record(_ work: PumpWork) -> [MQTTAcknowledgement] {
            guard work.epoch == epoch else { return [] }
            var refused: [MQTTAcknowledgement] = []
            for (id, retained) in work.sent {
                if !early.isEmpty, let ack = early.removeValue(forKey: id) {
                    if !ack.isSuccess { refused.append(ack) }
                } else {
                    inflight[id] = retained
                }
            }
            return refused
        }

        /// Fills `work` with the due topics that fit in the window; when none does, ends the
        /// pump and keeps its buffers for the next one (false).
        mutating func fillDue(_ work: inout PumpWork, window: Int) -> Bool {
            work.epoch = epoch
            work.messages.removeAll(keepingCapacity: true)
            work.sent.removeAll(keepingCapacity: true)
            while inflight.count + work.messages.count < window, let due = nextDue() {
                switch due {
                case .state(let device): work.messages.append((due, states[device] ?? [], false))
                case .topic(let topic):
                    let payload = payloads[topic]
                    // A cleared topic (no payload) goes at QoS 1.
                    work.messages.append((due, payload ?? [], payload != nil && !atMostOnce.isEmpty && atMostOnce.contains(topic)))
                }
            }
            if !work.messages.isEmpty { return true }
            pumping = false
            if !early.isEmpty { early.removeAll() }
            spare = work
            return false
        }
    }

    /// One pump's messages to publish and the message ids they got.
    private struct PumpWork: Sendable {
        var epoch = 0
        var messages: [(retained: Retained, payload: [UInt8], atMostOnce: Bool)] = []
        var sent: [(id: Int32, retained: Retained)] = []
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
                  sendAtMostOnce: { topic, payload in try client.publish(topic: topic, payload: payload, qos: .atMostOnce, retain: true) },
                  perform: { client.perform($0) }, onSendThread: { client.isNetworkThread },
                  discovery: discovery, occupancy: occupancy)
    }

    /// Publishing through any `send` (the tests' fake broker; `sendAtMostOnce` for QoS 0,
    /// default `send`), called in the jobs given to `perform` (default: right away) where
    /// `onSendThread` says so (default: anywhere).
    init(prefix: String, logger: Logger, window: Int, send: Send?, sendAtMostOnce: Send? = nil, perform: @escaping Perform = { $0() },
         onSendThread: @escaping @Sendable () -> Bool = { true },
         discovery: HomeAssistantDiscovery? = nil, occupancy: Bool = false) {
        self.prefix = prefix
        self.logger = logger
        self.window = max(1, window)
        self.send = send
        self.sendAtMostOnce = sendAtMostOnce ?? send
        self.perform = perform
        self.onSendThread = onSendThread
        self.discovery = discovery
        self.occupancyEnabled = occupancy
        if let discovery { publish(topic: discovery.gatewayConfigTopic, payload: discovery.gatewayConfig()) }
    }

    func topic(_ device: String) -> String { "\(prefix)/devices/\(device)/state" }

    /// Publishes a device's state and, with discovery, its tracker's config (the first time in
    /// this run) and attributes; a forgotten device's topics are cleared. Occupancy follows
    /// its stays.
    func publish(_ publication: DevicePublication) {
        let state = publication.state.map(StatePublisher.compacted)
        let attributes = publication.attributes.map(StatePublisher.compacted)
        book.withLock { book in
            set(.state(device: publication.device), state, in: &book)
            guard let discovery else { return }
            let config = discovery.trackerConfigTopic(device: publication.device)
            if publication.state == nil {
                set(.topic(config), nil, in: &book)
                set(.topic(discovery.attributesTopic(device: publication.device)), nil, in: &book)
            } else {
                if book.payloads[config] == nil { set(.topic(config), discovery.trackerConfig(device: publication.device), in: &book) }
                set(.topic(discovery.attributesTopic(device: publication.device)), attributes, in: &book)
            }
        }
        if occupancyEnabled, occupancy.withLock({ $0.update(device: publication.device, stays: publication.stays) }) {
            occupancyChanged.poke()
        }
        schedulePump()
    }

    /// Publishes `payload` retained on `topic`; nil clears the retained message (and the topic
    /// is no longer published on a connect). `atMostOnce`: at QoS 0 (a trip's progress between
    /// its changes, docs/trips.md "Progress": a lost one is replaced by the next, and only a
    /// broken connection loses one, after which ``republishAll()`` sends the newest); the
    /// messages of a connect's republish go at the QoS of their newest payload, a clear at QoS 1.
    func publish(topic: String, payload: [UInt8]?, atMostOnce: Bool = false) {
        let payload = payload.map(StatePublisher.compacted)
        book.withLock { book in
            if atMostOnce, payload != nil {
                book.atMostOnce.insert(topic)
            } else if !book.atMostOnce.isEmpty {
                book.atMostOnce.remove(topic)
            }
            set(.topic(topic), payload, in: &book)
        }
        schedulePump()
    }

    /// `payload` in a buffer of its own size, as the book keeps it until the topic's next
    /// payload. A serialized payload comes in the buffer it grew in (256 bytes reserved, then
    /// doubled when outgrown): a device's state of ~170 bytes held 256, one of ~300 up to 600.
    /// The copy is made outside the book's lock; a payload that fits its buffer is kept as is.
    static func compacted(_ payload: [UInt8]) -> [UInt8] {
        guard payload.capacity - payload.count > 16 else { return payload }
        return [UInt8](unsafeUninitializedCapacity: payload.count) { buffer, initialized in
            initialized = payload.withUnsafeBufferPointer { buffer.initialize(fromContentsOf: $0) }
        }
    }

    /// Cleared topics remembered to be cleared again at every connect (the oldest are let go).
    static let clearedKept = 10_000

    private func set(_ retained: Retained, _ payload: [UInt8]?, in book: inout Book) {
        switch retained {
        case .state(let device): book.states[device] = payload
        case .topic(let topic): book.payloads[topic] = payload
        }
        if payload == nil {
            if book.cleared.insert(retained).inserted {
                book.clearedOrder.append(retained)
                while book.cleared.count > Self.clearedKept, let oldest = book.clearedOrder.popFirst() { book.cleared.remove(oldest) }
            }
        } else if !book.cleared.isEmpty {
            // Set again: no longer cleared. Its place in the order is skipped when it comes
            // first; a queue grown past the set with such places is made again from the set.
            book.cleared.remove(retained)
            if book.clearedOrder.count > 2 * Self.clearedKept {
                book.clearedOrder.removeAll()
                for kept in book.cleared { book.clearedOrder.append(kept) }
            }
        }
        if send != nil { book.markDue(retained) }
    }

    /// Has the due topics handed over on the network thread, unless a job for it is queued.
    /// Where `perform` runs the job in place on another thread (no connection loop runs: not
    /// connected; a shard's restore, say, under the shard's lock), the topics stay due: the next
    /// connect publishes every topic (``republishAll()``).
    private func schedulePump() {
        guard send != nil, !pumpScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        perform { [self] in
            // Cleared before the pump looks: a device marked due from now on schedules another.
            pumpScheduled.store(false, ordering: .releasing)
            guard onSendThread() else { return }
            pump(book.withLock { $0.beginPump(window: window) })
        }
    }

    /// Publishes every retained topic again (after a connect), and clears again the topics
    /// cleared in this run (``Book/cleared``): a broker restarted from an old save is back in
    /// step. libmosquitto sends again what it held when the connection dropped; those
    /// acknowledgements no longer count here, so a message lost with a session cannot hold a
    /// place in the window for ever.
    func republishAll() {
        guard send != nil else { return }
        perform { [self] in
            let onThread = onSendThread()
            pump(book.withLock { book in
                book.inflight.removeAll()
                book.epoch &+= 1
                for device in book.states.keys { book.markDue(.state(device: device)) }
                for topic in book.payloads.keys { book.markDue(.topic(topic)) }
                for retained in book.cleared { book.markDue(retained) }
                return onThread ? book.beginPump(window: window) : nil
            })
        }
    }

    /// Takes the broker's answer to a retained message and sends the next due one. Returns
    /// false when `ack` is not for one of them (an event's, for the outbox).
    func acknowledged(_ ack: MQTTAcknowledgement) -> Bool {
        let (mine, work): (Bool, PumpWork?) = book.withLock { book in
            guard book.inflight.removeValue(forKey: ack.messageId) != nil else {
                // Perhaps of a message a pump elsewhere has published and not recorded yet.
                if book.pumping { book.early[ack.messageId] = ack }
                return (false, nil)
            }
            return (true, book.beginPump(window: window))
        }
        guard mine else { return false }
        if !ack.isSuccess { warnRefused(ack) }
        pump(work)
        return true
    }

    /// The retained topics known (published and not cleared).
    var count: Int { book.withLock { $0.states.count + $0.payloads.count } }

    /// The newest payload of retained topic `topic` (nil: not published, or cleared).
    func payload(of topic: String) -> [UInt8]? {
        book.withLock { book in
            if let payload = book.payloads[topic] { return payload }
            let head = prefix + "/devices/", tail = "/state"
            guard topic.hasPrefix(head), topic.hasSuffix(tail), topic.utf8.count > head.utf8.count + tail.utf8.count else { return nil }
            return book.states[String(topic.dropFirst(head.count).dropLast(tail.count))]
        }
    }

    /// Messages handed to libmosquitto and not yet acknowledged, and topics waiting for a place.
    var pending: (inflight: Int, due: Int) { book.withLock { ($0.inflight.count, $0.dueSet.count) } }

    /// Hands `started`'s messages (from ``Book/beginPump(window:)``; nil: another pump runs, or
    /// nothing is due) to libmosquitto, outside the lock, then records their message ids under it and
    /// goes on while due topics fit in the window. On the network thread no acknowledgement can
    /// come before the record; elsewhere (a job run in place while no connection loop runs) one
    /// that does is kept in ``Book/early`` and applied here.
    private func pump(_ started: PumpWork?) {
        guard let send, let sendAtMostOnce, var work = started else { return }
        while true {
            for (retained, payload, atMostOnce) in work.messages {
                // A device's topic is made here, outside the book's lock.
                let topic: String
                switch retained {
                case .state(let device): topic = self.topic(device)
                case .topic(let name): topic = name
                }
                do {
                    work.sent.append((try (atMostOnce ? sendAtMostOnce : send)(topic, payload), retained))
                } catch {
                    logger.debug("retained message not published now (sent again on reconnect)", ["mqtt.topic": topic, "error": "\(error)"])
                }
            }
            let (more, refused) = book.withLock { book in
                let refused = book.record(work)
                return (book.fillDue(&work, window: window), refused)
            }
            for ack in refused { warnRefused(ack) }
            guard more else { return }
        }
    }

    private func warnRefused(_ ack: MQTTAcknowledgement) {
        logger.warning("the broker refused a retained message", ["mqtt.reason": "0x\(String(ack.reasonCode, radix: 16)) \(ack.reason)"])
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
