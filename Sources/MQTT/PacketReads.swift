import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Whole-packet reads for libmosquitto's plain TCP sockets.
///
/// libmosquitto reads every incoming packet with three or more `read()` calls: the fixed
/// header's first byte, each byte of the remaining length, then the rest. For a feed of small
/// PUBLISH packets those calls are most of the network thread's kernel time. This process
/// defines `read` and `close` itself (libmosquitto's calls bind to them); for a socket
/// registered here, a one-byte read at a packet's start peeks at the fixed header
/// (`recv(MSG_PEEK)`), reads the whole packet with one `read`, and serves libmosquitto's
/// following reads of that packet from the copy: two system calls per packet.
///
/// It never reads past the packet it serves, so the socket holds what it would hold with
/// libmosquitto's own reads, `poll` stays truthful, and the copy is empty again when
/// libmosquitto has read the packet. Larger packets than the copy holds, a header that has not
/// fully arrived and unregistered descriptors take the plain `read`. Closing a registered
/// descriptor drops its registration, so a descriptor number used again is never served old
/// bytes (a descriptor replaced by `dup2` without a `close` would be; nothing here does that to
/// a socket). Only the thread that reads a registered socket (libmosquitto's network thread) may
/// read it; TLS sockets must not be registered (OpenSSL reads records, not packets).
public enum PacketReads {
    /// The largest packet served from a copy (fixed header included).
    public static let capacity = 8192
    /// How many sockets may be registered at once; further ones keep the plain `read`.
    static let slotCount = 256

    /// Serves whole-packet reads on `fd` until `unregister(_:)` or its `close`. False when
    /// every slot is taken (the socket then keeps the plain `read`).
    @discardableResult
    public static func register(_ fd: Int32) -> Bool {
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
    public static func unregister(_ fd: Int32) {
        guard fd >= 0, registry.active.load(ordering: .acquiring) > 0 else { return }
        for slot in registry.slots.prefix(registry.used.load(ordering: .acquiring)) where slot.fd.load(ordering: .acquiring) == fd {
            slot.reset()
            if slot.fd.compareExchange(expected: fd, desired: -1, ordering: .acquiringAndReleasing).exchanged {
                registry.active.subtract(1, ordering: .releasing)
            }
        }
    }

    /// Packets read whole since the process started (all sockets).
    public static var packetsRead: Int { registry.packetsRead.load(ordering: .relaxed) }

    /// Whether `fd` is served whole packets.
    public static func isRegistered(_ fd: Int32) -> Bool { registry.slot(for: fd) != nil }

    /// One socket's copy of the packet being read. Its bytes and positions are touched only by
    /// the thread that reads the socket (and by `reset` when that reading has ended); the
    /// bytes are allocated at the slot's first registration.
    final class Slot: @unchecked Sendable {
        let fd = Atomic<Int32>(-1)
        private(set) var bytes: UnsafeMutablePointer<UInt8>?
        var position = 0
        var length = 0

        func reset() {
            if bytes == nil { bytes = .allocate(capacity: PacketReads.capacity) }
            position = 0
            length = 0
        }
    }

    final class Registry: Sendable {
        let slots: [Slot] = (0..<PacketReads.slotCount).map { _ in Slot() }
        /// Registered sockets: with none, `read` and `close` go straight to the C library's.
        let active = Atomic<Int>(0)
        /// Slots ever taken, from the first: lookups look at these only (slots are taken
        /// lowest first, so a process with a few connections looks at a few).
        let used = Atomic<Int>(0)
        let packetsRead = Atomic<Int>(0)
        let plainRead: @convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int
        let plainClose: @convention(c) (Int32) -> Int32

        init() {
            // RTLD_NEXT: the definitions after this executable's, the C library's.
            let next = UnsafeMutableRawPointer(bitPattern: -1)
            guard let read = dlsym(next, "read"), let close = dlsym(next, "close") else {
                fatalError("PacketReads: the C library's read and close were not found")
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

    /// `read(2)` for libmosquitto: see the type's documentation.
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        guard let slot = registry.slot(for: fd), let buffer, count > 0 else {
            return registry.plainRead(fd, buffer, count)
        }
        guard let bytes = slot.bytes else { return registry.plainRead(fd, buffer, count) }
        if slot.position < slot.length {
            let n = min(count, slot.length - slot.position)
            buffer.copyMemory(from: bytes + slot.position, byteCount: n)
            slot.position += n
            return n
        }
        // Only a one-byte read can be the start of a packet (libmosquitto reads the rest of a
        // packet it has begun with larger counts).
        guard count == 1 else { return registry.plainRead(fd, buffer, count) }
        var header: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)
        let peeked = withUnsafeMutableBytes(of: &header) { recv(fd, $0.baseAddress, 5, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        // Nothing there (EAGAIN), the end of the stream (0) or an error: what read would say.
        if peeked <= 0 { return peeked }
        guard let total = withUnsafeBytes(of: &header, { packetLength(UnsafeRawBufferPointer(rebasing: $0[..<peeked])) }),
            total <= capacity
        else { return registry.plainRead(fd, buffer, count) }
        let got = registry.plainRead(fd, bytes, total)
        if got <= 0 { return got }
        registry.packetsRead.add(1, ordering: .relaxed)
        slot.length = got
        slot.position = 1
        buffer.storeBytes(of: bytes[0], as: UInt8.self)
        return 1
    }

    /// The whole length of the MQTT packet whose fixed header starts `header` (its first byte
    /// and as many remaining-length bytes as arrived); nil when the remaining length is not
    /// complete in `header` or longer than 4 bytes.
    static func packetLength(_ header: UnsafeRawBufferPointer) -> Int? {
        var remaining = 0
        var multiplier = 1
        var index = 1
        while index < header.count, index <= 4 {
            let byte = Int(header[index])
            remaining += (byte & 0x7F) * multiplier
            if byte & 0x80 == 0 { return 1 + index + remaining }
            multiplier *= 128
            index += 1
        }
        return nil
    }

    /// `close(2)`: a registered descriptor is unregistered first.
    static func close(_ fd: Int32) -> Int32 {
        unregister(fd)
        return registry.plainClose(fd)
    }
}

/// The process's `read`: libmosquitto's (and every other) `read` call lands here. Public so
/// that neither the optimizer nor the linker drops it.
@_cdecl("read")
public func geotriggerRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    PacketReads.read(fd, buffer, count)
}

/// The process's `close`: see `PacketReads`.
@_cdecl("close")
public func geotriggerClose(_ fd: Int32) -> Int32 {
    PacketReads.close(fd)
}
