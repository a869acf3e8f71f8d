import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Buffered reads for libmosquitto's plain TCP sockets, in a process whose `read` and `close`
/// are this type's (the `ReadInterposition` target, which only the `geotrigger` executable and
/// the MQTT tests link; ``isInterposed`` tells). Elsewhere sockets are never registered.
///
/// libmosquitto reads every incoming packet with three or more `read()` calls: the fixed
/// header's first byte, each byte of the remaining length, then the rest. For a feed of small
/// PUBLISH packets those calls are most of the network thread's kernel time. The process
/// defines `read` and `close` itself (libmosquitto's calls bind to them); a socket registered
/// here is read a buffer (`capacity` bytes) at a time, and libmosquitto's reads are served
/// from that buffer until it is empty: one system call for all the packets that had arrived.
/// A read that asks for at least `capacity` bytes while the buffer is empty (the rest of a
/// large packet) goes straight to the socket.
///
/// The socket no longer shows what is left to read: `poll` may say nothing is there while the
/// buffer still holds packets. The reading loop asks ``heldBytes(_:)`` before it waits
/// (`MQTTClientCore.turn`). Closing a registered descriptor drops its registration and what
/// it held, so a descriptor number used again is never served old bytes (a descriptor
/// replaced by `dup2` without a `close` would be; nothing here does that to a socket). Only
/// the thread that reads a registered socket (libmosquitto's network thread) may read it; TLS
/// sockets must not be registered (OpenSSL reads the socket itself and keeps its own buffer).
///
/// The process's `write` and `socketpair` are this type's too: a registered socket's writes
/// are gathered while the network thread writes libmosquitto's queued packets
/// (``gatherWrites(_:_:)``), and ``withoutSocketPair(_:)`` keeps libmosquitto from making the
/// wake-up socket pair that it writes a byte to for every packet it queues.
public enum BufferedReads {
    /// Bytes one read from the socket takes at most.
    public static let capacity = 16384
    /// How many sockets may be registered at once; further ones keep the plain `read`.
    static let slotCount = 256

    /// Serves buffered reads on `fd` until `unregister(_:)` or its `close`. False when
    /// every slot is taken (the socket then keeps the plain `read`).
    @discardableResult
    @_spi(BufferedReads) public static func register(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return false }
        unregister(fd)
        for (index, slot) in registry.slots.enumerated() {
            if slot.fd.compareExchange(expected: -1, desired: fd, ordering: .acquiringAndReleasing).exchanged {
                slot.reset()
                registry.active.add(1, ordering: .releasing)
                registry.used.max(index + 1, ordering: .releasing)
                return true
            }
        }
        return false
    }

    /// Back to the plain `read` on `fd`, dropping any bytes still held for it.
    @_spi(BufferedReads) public static func unregister(_ fd: Int32) {
        guard fd >= 0, registry.active.load(ordering: .acquiring) > 0 else { return }
        for slot in registry.slots.prefix(registry.used.load(ordering: .acquiring)) where slot.fd.load(ordering: .acquiring) == fd {
            slot.reset()
            if slot.fd.compareExchange(expected: fd, desired: -1, ordering: .acquiringAndReleasing).exchanged {
                registry.active.subtract(1, ordering: .releasing)
            }
        }
    }

    /// Reads from registered sockets into their buffers since the process started (all
    /// sockets): fewer than the reads they served.
    @_spi(BufferedReads) public static var socketReads: Int { registry.socketReads.load(ordering: .relaxed) }

    /// Reads served from the buffers since the process started (all sockets).
    @_spi(BufferedReads) public static var servedReads: Int { registry.servedReads.load(ordering: .relaxed) }

    /// Whether `fd` is read through a buffer.
    @_spi(BufferedReads) public static func isRegistered(_ fd: Int32) -> Bool { registry.slot(for: fd) != nil }

    /// One socket's buffer: what the last read from the socket took, and how far it has been
    /// served. Its bytes and positions are touched only by the thread that reads the socket
    /// (and by `reset` when that reading has ended); the bytes are allocated at the slot's
    /// first registration.
    final class Slot: @unchecked Sendable {
        let fd = Atomic<Int32>(-1)
        private(set) var bytes: UnsafeMutablePointer<UInt8>?
        var position = 0
        var length = 0
        /// Bytes read from the socket since the registration.
        var taken = 0
        /// Inside ``BufferedReads/readTurn(_:_:)``: a read from the socket that took less than
        /// the buffer emptied it, so the next one would only say EAGAIN.
        var reading = false
        var drained = false
        /// Gathered writes (``BufferedReads/gatherWrites(_:_:)``): bytes written by the caller
        /// and not yet by the socket are `out[outStart..<outEnd]`; allocated at the first one.
        private(set) var out: UnsafeMutablePointer<UInt8>?
        var outStart = 0
        var outEnd = 0
        var gathering = false

        func reset() {
            if bytes == nil { bytes = .allocate(capacity: BufferedReads.capacity) }
            position = 0
            length = 0
            taken = 0
            reading = false
            drained = false
            outStart = 0
            outEnd = 0
            gathering = false
        }

        /// The gathered-writes buffer, allocated at its first use.
        func outBuffer() -> UnsafeMutablePointer<UInt8> {
            if let out { return out }
            let made = UnsafeMutablePointer<UInt8>.allocate(capacity: BufferedReads.outCapacity)
            out = made
            return made
        }
    }

    final class Registry: Sendable {
        let slots: [Slot] = (0..<BufferedReads.slotCount).map { _ in Slot() }
        /// Registered sockets: with none, `read` and `close` go straight to the C library's.
        let active = Atomic<Int>(0)
        /// Slots ever taken, from the first: lookups look at these only (slots are taken
        /// lowest first, so a process with a few connections looks at a few).
        let used = Atomic<Int>(0)
        let socketReads = Atomic<Int>(0)
        let servedReads = Atomic<Int>(0)
        let gatheredWrites = Atomic<Int>(0)
        let socketWrites = Atomic<Int>(0)
        let plainRead: @convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int
        let plainWrite: @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int
        let plainClose: @convention(c) (Int32) -> Int32
        let plainSocketPair: @convention(c) (Int32, Int32, Int32, UnsafeMutablePointer<Int32>?) -> Int32

        init() {
            // RTLD_NEXT: the definitions after this executable's, the C library's.
            let next = UnsafeMutableRawPointer(bitPattern: -1)
            guard let read = dlsym(next, "read"), let write = dlsym(next, "write"), let close = dlsym(next, "close"),
                  let socketPair = dlsym(next, "socketpair") else {
                fatalError("BufferedReads: the C library's read, write, close and socketpair were not found")
            }
            plainRead = unsafeBitCast(read, to: (@convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int).self)
            plainWrite = unsafeBitCast(write, to: (@convention(c) (Int32, UnsafeRawPointer?, Int) -> Int).self)
            plainClose = unsafeBitCast(close, to: (@convention(c) (Int32) -> Int32).self)
            plainSocketPair = unsafeBitCast(
                socketPair, to: (@convention(c) (Int32, Int32, Int32, UnsafeMutablePointer<Int32>?) -> Int32).self)
        }

        func slot(for fd: Int32) -> Slot? {
            guard fd >= 0, active.load(ordering: .acquiring) > 0 else { return nil }
            for slot in slots.prefix(used.load(ordering: .acquiring)) where slot.fd.load(ordering: .acquiring) == fd {
                return slot
            }
            return nil
        }
    }

    static let registry = Registry()

    /// Whether this process's `read` is ``read(_:_:_:)`` (the executable links
    /// `ReadInterposition`): the first `read` the dynamic linker finds is not the C library's.
    public static let isInterposed: Bool = {
        let first = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "read")  // RTLD_DEFAULT
        return first != nil && first != unsafeBitCast(registry.plainRead, to: UnsafeMutableRawPointer?.self)
    }()

    /// `read(2)` for libmosquitto: see the type's documentation. At most what the buffer holds
    /// (libmosquitto reads on until it has the packet); when it is empty, one read from the
    /// socket fills it, and what that read says (0 at the end of the stream, -1 with `errno`
    /// such as EAGAIN) is the answer.
    @_spi(BufferedReads) public static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        guard let slot = registry.slot(for: fd), let buffer, count > 0, let bytes = slot.bytes else {
            return registry.plainRead(fd, buffer, count)
        }
        if slot.position == slot.length {
            if slot.drained {
                errno = EAGAIN
                return -1
            }
            if count >= capacity {
                let got = registry.plainRead(fd, buffer, count)
                if got > 0 { slot.taken += got }
                return got
            }
            let got = registry.plainRead(fd, bytes, capacity)
            if got <= 0 { return got }
            if got < capacity, slot.reading { slot.drained = true }
            registry.socketReads.add(1, ordering: .relaxed)
            slot.position = 0
            slot.length = got
            slot.taken += got
        }
        let n = min(count, slot.length - slot.position)
        buffer.copyMemory(from: bytes + slot.position, byteCount: n)
        slot.position += n
        registry.servedReads.add(1, ordering: .relaxed)
        return n
    }

    /// Bytes read from `fd` since it was registered (0 for an unregistered descriptor). Only
    /// for the thread that reads it.
    @_spi(BufferedReads) public static func takenBytes(_ fd: Int32) -> Int {
        registry.slot(for: fd)?.taken ?? 0
    }

    /// Bytes taken from `fd` and not served yet (0 for an unregistered descriptor): while
    /// there are any, the socket's readiness says nothing about what is left to read.
    @_spi(BufferedReads) public static func heldBytes(_ fd: Int32) -> Int {
        guard let slot = registry.slot(for: fd) else { return 0 }
        return slot.length - slot.position
    }

    /// Runs `body` (a turn's reads of `fd`, after `poll` said it is readable) so that once a read
    /// from the socket took less than the buffer holds, the reads after it within `body` say
    /// EAGAIN without asking the kernel: the socket was empty a moment ago, and what arrives
    /// meanwhile wakes the next `poll`. libmosquitto reads on until EAGAIN, so every turn
    /// ended with a `read` that found nothing. Only for the thread that reads `fd`.
    @_spi(BufferedReads) public static func readTurn<Result>(_ fd: Int32, _ body: () -> Result) -> Result {
        guard let slot = registry.slot(for: fd) else { return body() }
        slot.reading = true
        slot.drained = false
        defer {
            // `body` may have closed `fd` (the slot was reset then, or taken by another socket:
            // only this thread registers them).
            if slot.fd.load(ordering: .acquiring) == fd {
                slot.reading = false
                slot.drained = false
            }
        }
        return body()
    }

    /// The most bytes gathered writes hold for one socket; a write that does not fit is
    /// preceded by writing what is held.
    public static let outCapacity = 65536

    /// Runs `body` (libmosquitto's writing of its queued packets) so that its writes to `fd`
    /// are gathered and go to the socket in one `write` at the end: a burst of small packets
    /// becomes one system call and one TCP segment over loopback, where each `write` had the
    /// whole transmit path (and, on loopback, the receiver's too). What the socket does not
    /// take at the end is held (``heldWriteBytes(_:)``) and written first by the next
    /// `gatherWrites` (the caller waits for POLLOUT while any is held). A socket error drops
    /// what is held: the connection is lost, which the next read reports, and libmosquitto
    /// sends its QoS > 0 messages again on the next connection. Only for the thread that
    /// writes `fd`; a descriptor not registered is written as it is.
    @_spi(BufferedReads) public static func gatherWrites<Result>(_ fd: Int32, _ body: () -> Result) -> Result {
        guard let slot = registry.slot(for: fd) else { return body() }
        slot.gathering = true
        let result = body()
        // `body` may have closed `fd` (the slot was reset then).
        if slot.fd.load(ordering: .acquiring) == fd {
            slot.gathering = false
            flush(fd, slot)
        }
        return result
    }

    /// Bytes written to `fd` through ``gatherWrites(_:_:)`` that the socket has not taken yet.
    @_spi(BufferedReads) public static func heldWriteBytes(_ fd: Int32) -> Int {
        guard let slot = registry.slot(for: fd) else { return 0 }
        return slot.outEnd - slot.outStart
    }

    /// Writes what `slot` holds for `fd` until the socket takes no more; false on an error
    /// other than EAGAIN (what was held is dropped then).
    @discardableResult
    private static func flush(_ fd: Int32, _ slot: Slot) -> Bool {
        guard slot.outEnd > slot.outStart, let out = slot.out else { return true }
        while slot.outStart < slot.outEnd {
            let wrote = registry.plainWrite(fd, out + slot.outStart, slot.outEnd - slot.outStart)
            if wrote > 0 {
                slot.outStart += wrote
                registry.socketWrites.add(1, ordering: .relaxed)
            } else if wrote < 0, errno == EINTR {
                continue
            } else if wrote < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return true
            } else {
                slot.outStart = 0
                slot.outEnd = 0
                return false
            }
        }
        slot.outStart = 0
        slot.outEnd = 0
        return true
    }

    /// `write(2)`: on a registered socket, gathered inside ``gatherWrites(_:_:)``, and queued
    /// behind what is still held from one (the bytes must not overtake it); otherwise the C
    /// library's. A write that does not fit what is left of the buffer first writes what is
    /// held; if the socket does not take it, the answer is EAGAIN (libmosquitto keeps the
    /// packet and writes it again later).
    @_spi(BufferedReads) public static func write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        guard let slot = registry.slot(for: fd), let buffer, count > 0,
              slot.gathering || slot.outEnd > slot.outStart else {
            return registry.plainWrite(fd, buffer, count)
        }
        if slot.outEnd + count > outCapacity {
            guard flush(fd, slot) else { return -1 }
            if slot.outEnd > slot.outStart, slot.outStart > 0, let out = slot.out {
                // Move what the socket left to the front.
                memmove(out, out + slot.outStart, slot.outEnd - slot.outStart)
                slot.outEnd -= slot.outStart
                slot.outStart = 0
            }
            if slot.outEnd == 0, count >= outCapacity { return registry.plainWrite(fd, buffer, count) }
            if slot.outEnd + count > outCapacity {
                errno = EAGAIN
                return -1
            }
        }
        let out = slot.outBuffer()
        memcpy(out + slot.outEnd, buffer, count)
        slot.outEnd += count
        registry.gatheredWrites.add(1, ordering: .relaxed)
        return count
    }

    /// Writes gathered since the process started (all sockets), and the writes to the sockets
    /// that carried them: fewer.
    @_spi(BufferedReads) public static var gatheredWrites: Int { registry.gatheredWrites.load(ordering: .relaxed) }
    @_spi(BufferedReads) public static var socketWrites: Int { registry.socketWrites.load(ordering: .relaxed) }

    /// `socketpair(2)`: refused (EMFILE) on a thread inside ``withoutSocketPair(_:)``, the C
    /// library's otherwise.
    @_spi(BufferedReads) public static func socketPair(
        _ domain: Int32, _ type: Int32, _ proto: Int32, _ fds: UnsafeMutablePointer<Int32>?
    ) -> Int32 {
        if pthread_getspecific(noSocketPairKey) != nil {
            errno = EMFILE
            return -1
        }
        return registry.plainSocketPair(domain, type, proto, fds)
    }

    /// Runs `body` (a libmosquitto call that makes a client's wake-up socket pair: `mosquitto_new`
    /// and every `mosquitto_connect*`) with `socketpair` refused on this thread. libmosquitto
    /// then runs without the pair (it logs a warning nobody hears), and its `packet__queue` no
    /// longer writes a byte to it for every packet queued: a system call per packet (EAGAIN
    /// once the pair is full), for a pair only `mosquitto_loop` reads. A client whose own loop
    /// is woken otherwise (``MQTTClient``'s eventfd) loses nothing. Without the interposition
    /// (``isInterposed`` false) the pair is made as usual.
    @_spi(BufferedReads) public static func withoutSocketPair<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_setspecific(noSocketPairKey, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(noSocketPairKey, nil) }
        return try body()
    }

    private static let noSocketPairKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// `close(2)`: a registered descriptor is unregistered first.
    @_spi(BufferedReads) public static func close(_ fd: Int32) -> Int32 {
        unregister(fd)
        return registry.plainClose(fd)
    }
}
