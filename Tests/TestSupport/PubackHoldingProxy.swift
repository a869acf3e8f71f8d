import Foundation

/// A TCP proxy on a loopback port in front of a broker that can hold back the broker's PUBACKs
/// to its clients: a client's QoS 1 messages then stay unacknowledged (in flight) for as long
/// as the test wants, while everything else (the messages the broker delivers, CONNACK,
/// SUBACK, PINGRESP) goes through. Each connection is copied byte for byte toward the broker;
/// toward the client it is read packet by packet (MQTT's fixed header and remaining length).
/// ``release()`` sends the held PUBACKs, in order, and stops holding.
public final class PubackHoldingProxy: @unchecked Sendable {
    // @unchecked: `state` is guarded by `lock`; the threads own their descriptors.

    public let port: Int
    private let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var holding = false
    private var held: [(fd: Int32, packet: [UInt8])] = []
    private var sockets: [Int32] = []
    private var closed = false

    /// Listens on a free loopback port and forwards every connection to 127.0.0.1:`targetPort`.
    public init(to targetPort: Int) throws {
        target = targetPort
        port = try FreePort.next()
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestSupportError("socket() failed") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            Foundation.close(listener)
            throw TestSupportError("cannot listen on 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// From now on the broker's PUBACKs wait.
    public func hold() { lock.withLock { holding = true } }

    /// PUBACKs held so far.
    public var heldCount: Int { lock.withLock { held.count } }

    /// Sends the held PUBACKs in order and lets the next ones through.
    public func release() {
        lock.withLock {
            holding = false
            for (fd, packet) in held { Self.writeAll(fd, packet) }
            held.removeAll()
        }
    }

    /// Closes the listener and every connection.
    public func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            shutdown(listener, Int32(SHUT_RDWR))
            Foundation.close(listener)
            for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { close() }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                Foundation.close(client)
                Foundation.close(upstream)
                continue
            }
            let open = lock.withLock { () -> Bool in
                guard !closed else { return false }
                sockets += [client, upstream]
                return true
            }
            guard open else {
                Foundation.close(client)
                Foundation.close(upstream)
                return
            }
            Thread.detachNewThread { [self] in copy(from: client, to: upstream) }
            Thread.detachNewThread { [self] in packets(from: upstream, to: client) }
        }
    }

    /// Client to broker: every byte as it comes.
    private func copy(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            // Only this thread writes toward the broker: no lock (a full socket must not hold the other direction).
            Self.writeAll(destination, Array(buffer[0..<n]))
        }
        shutdown(destination, Int32(SHUT_RDWR))
        shutdown(source, Int32(SHUT_RDWR))
    }

    /// Broker to client: packet by packet, PUBACKs (type 4) held while ``hold()`` is on.
    private func packets(from source: Int32, to destination: Int32) {
        while let packet = Self.readPacket(source) {
            lock.withLock {
                if holding, packet[0] >> 4 == 4 {
                    held.append((destination, packet))
                } else {
                    Self.writeAll(destination, packet)
                }
            }
        }
        shutdown(destination, Int32(SHUT_RDWR))
        shutdown(source, Int32(SHUT_RDWR))
    }

    /// One MQTT packet: its fixed header, remaining length and body (nil at the end).
    private static func readPacket(_ fd: Int32) -> [UInt8]? {
        guard var packet = readExactly(fd, 1) else { return nil }
        var length = 0, shift = 0
        repeat {
            guard shift <= 21, let byte = readExactly(fd, 1) else { return nil }
            packet += byte
            length |= Int(byte[0] & 0x7f) << shift
            shift += 7
        } while packet.last! & 0x80 != 0
        guard length > 0 else { return packet }
        guard let body = readExactly(fd, length) else { return nil }
        return packet + body
    }

    private static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, count - done) }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            done += n
        }
    }
}
