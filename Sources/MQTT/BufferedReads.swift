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

        func reset() {
            if bytes == nil { bytes = .allocate(capacity: BufferedReads.capacity) }
            position = 0
            length = 0
            taken = 0
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
        let plainRead: @convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int
        let plainClose: @convention(c) (Int32) -> Int32

        init() {
            // RTLD_NEXT: the definitions after this executable's, the C library's.
            let next = UnsafeMutableRawPointer(bitPattern: -1)
            guard let read = dlsym(next, "read"), let close = dlsym(next, "close") else {
                fatalError("BufferedReads: the C library's read and close were not found")
            }
            plainRead = unsafeBitCast(read, to: (@convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int).self)
            plainClose = unsafeBitCast(close, to: (@convention(c) (Int32) -> Int32).self)
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
            if count >= capacity {
                let got = registry.plainRead(fd, buffer, count)
                if got > 0 { slot.taken += got }
                return got
            }
            let got = registry.plainRead(fd, bytes, capacity)
            if got <= 0 { return got }
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

    /// `close(2)`: a registered descriptor is unregistered first.
    @_spi(BufferedReads) public static func close(_ fd: Int32) -> Int32 {
        unregister(fd)
        return registry.plainClose(fd)
    }
}
