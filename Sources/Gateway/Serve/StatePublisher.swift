import MQTT
import Synchronization

/// Publishes retained device states (`PREFIX/devices/DEVICE/state`) and remembers them, so
/// that every (re)connect can publish them all again (DESIGN.md: "On every (re)connect ...
/// republish retained device states").
///
/// At most `window` states are with libmosquitto at a time (QoS 1, waiting for their PUBACK).
/// The others wait here as "device D is due", and a device whose state changes again before
/// its turn goes out once, with its newest state. Without the window, 10,000 devices
/// appearing at once queued 14,000 copies of their states in libmosquitto behind the broker's
/// receive maximum (3.8 MB at the benchmark's peak); with it the queue holds device names.
///
/// States are handed to libmosquitto on its network thread (``MQTTClient/perform(_:)``), where
/// the acknowledgements arrive too: the committer's thread only marks a device as due.
final class StatePublisher: Sendable {
    /// Hands one message to libmosquitto and returns its message id.
    typealias Send = @Sendable (_ topic: String, _ payload: [UInt8]) throws -> Int32
    /// Runs a job where `send` should be called (the network thread).
    typealias Perform = @Sendable (@escaping @Sendable () -> Void) -> Void

    let prefix: String
    let logger: Logger
    let window: Int
    /// Nil in `bench store`: states are only remembered.
    private let send: Send?
    private let perform: Perform
    private let book = Mutex(Book())
    /// A pump job is handed to `perform` and has not started yet.
    private let pumpScheduled = Atomic<Bool>(false)

    private struct Book: ~Copyable {
        /// The newest state of every known device (a forgotten device is absent).
        var states: [String: [UInt8]] = [:]
        /// Devices whose newest state has not been handed to libmosquitto, oldest first
        /// (`due[head...]`), and the same as a set.
        var due: [String] = []
        var head = 0
        var dueSet: Set<String> = []
        /// Message id -> device, for the states libmosquitto holds.
        var inflight: [Int32: String] = [:]

        mutating func markDue(_ device: String) {
            if dueSet.insert(device).inserted { due.append(device) }
        }

        mutating func nextDue() -> String? {
            guard head < due.count else { return nil }
            let device = due[head]
            head += 1
            if head == due.count {
                due.removeAll(keepingCapacity: due.count <= 1024)
                head = 0
            } else if head >= 1024 && head * 2 >= due.count {
                due.removeFirst(head)
                head = 0
            }
            dueSet.remove(device)
            return device
        }
    }

    /// Publishing through `client` (nil: only remembering states).
    convenience init(client: MQTTClient?, prefix: String, logger: Logger, window: Int = 64) {
        guard let client else {
            self.init(prefix: prefix, logger: logger, window: window, send: nil)
            return
        }
        self.init(prefix: prefix, logger: logger, window: window,
                  send: { topic, payload in try client.publish(topic: topic, payload: payload, qos: .atLeastOnce, retain: true) },
                  perform: { client.perform($0) })
    }

    /// Publishing through any `send` (the tests' fake broker), called in the jobs given to
    /// `perform` (default: right away).
    init(prefix: String, logger: Logger, window: Int, send: Send?, perform: @escaping Perform = { $0() }) {
        self.prefix = prefix
        self.logger = logger
        self.window = max(1, window)
        self.send = send
        self.perform = perform
    }

    func topic(_ device: String) -> String { "\(prefix)/devices/\(device)/state" }

    /// Publishes `payload` retained for `device`; nil clears the retained message (forgotten device).
    func publish(device: String, payload: [UInt8]?) {
        book.withLock { book in
            book.states[device] = payload
            if send != nil { book.markDue(device) }
        }
        guard send != nil, !pumpScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        perform { [self] in
            // Cleared before the pump looks: a device marked due from now on schedules another.
            pumpScheduled.store(false, ordering: .releasing)
            book.withLock { pump(&$0) }
        }
    }

    /// Publishes every known state again (after a connect). libmosquitto sends again what it
    /// held when the connection dropped; those acknowledgements no longer count here, so a
    /// message lost with a session cannot hold a place in the window for ever.
    func republishAll() {
        guard send != nil else { return }
        perform { [self] in
            book.withLock { book in
                book.inflight.removeAll()
                for device in book.states.keys { book.markDue(device) }
                pump(&book)
            }
        }
    }

    /// Takes the broker's answer to a state message and sends the next due state. Returns
    /// false when `ack` is not for a state message (an event's, for the outbox).
    func acknowledged(_ ack: MQTTAcknowledgement) -> Bool {
        book.withLock { book in
            guard book.inflight.removeValue(forKey: ack.messageId) != nil else { return false }
            if !ack.isSuccess {
                logger.warning("the broker refused a device state", ["mqtt.reason": "0x\(String(ack.reasonCode, radix: 16)) \(ack.reason)"])
            }
            pump(&book)
            return true
        }
    }

    var count: Int { book.withLock { $0.states.count } }

    /// States handed to libmosquitto and not yet acknowledged, and states waiting for a place.
    var pending: (inflight: Int, due: Int) { book.withLock { ($0.inflight.count, $0.dueSet.count) } }

    /// Hands due states to libmosquitto while the window has room. Called with the lock held, so
    /// an acknowledgement cannot overtake the message id being recorded (and on the network
    /// thread, where the acknowledgements arrive).
    private func pump(_ book: inout Book) {
        guard let send else { return }
        while book.inflight.count < window, let device = book.nextDue() {
            do {
                let id = try send(topic(device), book.states[device] ?? [])
                book.inflight[id] = device
            } catch {
                logger.debug("device state not published now (sent again on reconnect)", ["device.id": device, "error": "\(error)"])
            }
        }
    }
}
