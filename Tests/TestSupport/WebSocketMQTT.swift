import Foundation

/// A minimal MQTT 3.1.1 client over WebSocket (RFC 6455), as a browser's MQTT library speaks
/// to mosquitto's `protocol websockets` listener: an HTTP Upgrade with
/// `Sec-WebSocket-Protocol: mqtt`, then each MQTT packet in masked binary frames. libmosquitto
/// cannot speak WebSockets, so the tests of that listener use this. Enough for tests: CONNECT,
/// SUBSCRIBE, PUBLISH at QoS 0 and 1 (PUBACKs sent and awaited), received PUBLISHes; no QoS
/// 2, no keepalive pings (keep tests shorter than the keepalive). One task uses a client at
/// a time.
public final class WebSocketMQTTClient {
    /// A received PUBLISH.
    public struct Message: Sendable, Equatable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: UInt8
        public var retain: Bool
        /// The payload as UTF-8 text.
        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    /// What the broker's CONNACK said.
    public struct ConnAck: Sendable, Equatable {
        public var sessionPresent: Bool
        /// 0 accepted; 4 bad user name or password; 5 not authorised.
        public var returnCode: UInt8

        public init(sessionPresent: Bool, returnCode: UInt8) {
            self.sessionPresent = sessionPresent
            self.returnCode = returnCode
        }
    }

    private let fd: Int32
    /// Received bytes not yet parsed into frames.
    private var frames: [UInt8] = []
    /// MQTT bytes (binary frames' payloads) not yet parsed into packets.
    private var stream: [UInt8] = []
    /// Parsed packets other than PUBLISH, in order: (first byte, body).
    private var packets: [(UInt8, [UInt8])] = []
    private var nextPacketID: UInt16 = 1
    /// Every PUBLISH received so far, in order.
    public private(set) var messages: [Message] = []
    /// Whether the broker closed the connection (TCP end or a close frame).
    public private(set) var isClosed = false
    /// The HTTP response to the Upgrade (status line and headers).
    public let upgradeResponse: String

    /// Connects to 127.0.0.1:`port` and upgrades to a WebSocket with subprotocol `mqtt`.
    /// - Throws: `TestSupportError` if the TCP connection fails or the broker does not answer
    ///   101 Switching Protocols with the `mqtt` subprotocol.
    public init(port: Int, path: String = "/mqtt", timeout: Duration = .seconds(10)) throws {
        let socket = try Self.connectLoopback(port: port)
        var key = [UInt8](repeating: 0, count: 16)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(Data(key).base64EncodedString())\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Protocol: mqtt\r\nOrigin: http://127.0.0.1:\(port)\r\n\r\n"
        let head: String
        let rest: [UInt8]
        do {
            try Self.send(socket, Array(request.utf8))
            (head, rest) = try Self.readHead(socket, timeout: timeout)
        } catch {
            Glibc.close(socket)
            throw error
        }
        let lines = head.lowercased().split(separator: "\r\n")
        guard lines.first?.hasPrefix("http/1.1 101") == true,
              lines.contains(where: { $0.hasPrefix("sec-websocket-protocol:") && $0.hasSuffix("mqtt") }) else {
            Glibc.close(socket)
            throw TestSupportError("no WebSocket upgrade with subprotocol mqtt on port \(port):\n\(head)")
        }
        fd = socket
        upgradeResponse = head
        frames = rest
    }

    deinit { Glibc.close(fd) }

    /// Sends CONNECT and waits for the CONNACK.
    public func connect(
        clientID: String, username: String?, password: String?, cleanSession: Bool,
        keepalive: UInt16 = 120, timeout: Duration = .seconds(10)
    ) async throws -> ConnAck {
        var flags: UInt8 = cleanSession ? 0x02 : 0
        if username != nil { flags |= 0x80 }
        if password != nil { flags |= 0x40 }
        var body = Self.string("MQTT") + [4, flags, UInt8(keepalive >> 8), UInt8(keepalive & 0xFF)] + Self.string(clientID)
        if let username { body += Self.string(username) }
        if let password { body += Self.string(password) }
        try sendPacket(0x10, body)
        let connack = try await waitPacket(type: 0x20, timeout: timeout)
        guard connack.count >= 2 else { throw TestSupportError("short CONNACK \(connack)") }
        return ConnAck(sessionPresent: connack[0] & 1 == 1, returnCode: connack[1])
    }

    /// Sends SUBSCRIBE for `filters` and returns the SUBACK's return codes (the granted QoS, or
    /// 0x80 for a refused filter).
    public func subscribe(_ filters: [String], qos: UInt8 = 1, timeout: Duration = .seconds(10)) async throws -> [UInt8] {
        let id = takePacketID()
        var body = [UInt8(id >> 8), UInt8(id & 0xFF)]
        for filter in filters { body += Self.string(filter) + [qos] }
        try sendPacket(0x82, body)
        let suback = try await waitPacket(type: 0x90, id: id, timeout: timeout)
        return Array(suback.dropFirst(2))
    }

    /// Sends PUBLISH; at QoS 1 waits for its PUBACK.
    public func publish(topic: String, payload: [UInt8], qos: UInt8 = 1, retain: Bool = false, timeout: Duration = .seconds(10)) async throws {
        var body = Self.string(topic)
        let id = takePacketID()
        if qos > 0 { body += [UInt8(id >> 8), UInt8(id & 0xFF)] }
        try sendPacket(0x30 | (qos << 1) | (retain ? 1 : 0), body + payload)
        if qos > 0 { _ = try await waitPacket(type: 0x40, id: id, timeout: timeout) }
    }

    /// Waits until a message matching `matching` arrived (also one received earlier).
    public func waitMessage(timeout: Duration = .seconds(10), matching: (Message) -> Bool = { _ in true }) async -> Message? {
        var found: Message?
        _ = await poll(timeout: timeout, interval: .milliseconds(10)) {
            try? pump()
            found = messages.first(where: matching)
            return found != nil || isClosed
        }
        return found
    }

    /// Reads what has arrived for up to `duration` (to see messages or a close that may come).
    public func settle(for duration: Duration) async {
        _ = await poll(timeout: duration, interval: .milliseconds(10)) {
            try? pump()
            return isClosed
        }
    }

    /// Sends DISCONNECT and closes the socket's sending side.
    public func disconnect() {
        try? sendPacket(0xE0, [])
        shutdown(fd, Int32(SHUT_WR))
    }

    private func takePacketID() -> UInt16 {
        defer { nextPacketID = nextPacketID == UInt16.max ? 1 : nextPacketID + 1 }
        return nextPacketID
    }

    /// Waits for a packet of `type` (its upper four bits), with packet id `id` when given.
    private func waitPacket(type: UInt8, id: UInt16? = nil, timeout: Duration) async throws -> [UInt8] {
        var found: [UInt8]?
        _ = await poll(timeout: timeout, interval: .milliseconds(10)) {
            try? pump()
            if let index = packets.firstIndex(where: { packet in
                packet.0 & 0xF0 == type && (id == nil || (packet.1.count >= 2 && UInt16(packet.1[0]) << 8 | UInt16(packet.1[1]) == id))
            }) {
                found = packets.remove(at: index).1
            }
            return found != nil || isClosed
        }
        guard let found else {
            throw TestSupportError("no packet 0x\(String(type, radix: 16)) \(isClosed ? "(the broker closed the connection)" : "within \(timeout)")")
        }
        return found
    }

    // MARK: Frames and packets

    /// The MQTT packet `first` + remaining length + `body`, in one masked binary frame.
    private func sendPacket(_ first: UInt8, _ body: [UInt8]) throws {
        var packet = [first]
        var length = body.count
        repeat {
            var byte = UInt8(length % 128)
            length /= 128
            if length > 0 { byte |= 0x80 }
            packet.append(byte)
        } while length > 0
        try sendFrame(opcode: 0x2, packet + body)
    }

    private func sendFrame(opcode: UInt8, _ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x80 | opcode]
        switch payload.count {
        case ..<126: frame.append(0x80 | UInt8(payload.count))
        case ..<65_536: frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            frame.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((UInt64(payload.count) >> UInt64(shift)) & 0xFF)) }
        }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try Self.send(fd, frame)
    }

    /// Reads whatever is there without waiting, and parses frames and packets from it.
    private func pump() throws {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !isClosed {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&descriptor, 1, 0) > 0 else { break }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 {
                if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
                isClosed = true
                break
            }
            frames += buffer[..<count]
        }
        try parseFrames()
        parsePackets()
    }

    private func parseFrames() throws {
        while frames.count >= 2 {
            let opcode = frames[0] & 0x0F
            var length = Int(frames[1] & 0x7F)
            var offset = 2
            if length == 126 {
                guard frames.count >= 4 else { return }
                length = Int(frames[2]) << 8 | Int(frames[3])
                offset = 4
            } else if length == 127 {
                guard frames.count >= 10 else { return }
                length = frames[2..<10].reduce(0) { $0 << 8 | Int($1) }
                offset = 10
            }
            let masked = frames[1] & 0x80 != 0
            var mask: [UInt8] = []
            if masked {
                guard frames.count >= offset + 4 else { return }
                mask = Array(frames[offset..<offset + 4])
                offset += 4
            }
            guard frames.count >= offset + length else { return }
            var payload = Array(frames[offset..<offset + length])
            if masked { payload = payload.enumerated().map { $0.element ^ mask[$0.offset % 4] } }
            frames.removeFirst(offset + length)
            switch opcode {
            case 0x0, 0x2: stream += payload
            case 0x8: isClosed = true
            case 0x9: try sendFrame(opcode: 0xA, payload)
            default: break
            }
        }
    }

    private func parsePackets() {
        while stream.count >= 2 {
            var length = 0
            var multiplier = 1
            var index = 1
            while true {
                guard index < stream.count else { return }
                let byte = stream[index]
                length += Int(byte & 0x7F) * multiplier
                multiplier *= 128
                index += 1
                if byte & 0x80 == 0 { break }
            }
            guard stream.count >= index + length else { return }
            let first = stream[0]
            let body = Array(stream[index..<index + length])
            stream.removeFirst(index + length)
            if first & 0xF0 == 0x30 {
                received(first, body)
            } else {
                packets.append((first, body))
            }
        }
    }

    private func received(_ first: UInt8, _ body: [UInt8]) {
        guard body.count >= 2 else { return }
        let topicLength = Int(body[0]) << 8 | Int(body[1])
        let qos = (first >> 1) & 0x03
        var offset = 2 + topicLength
        guard body.count >= offset + (qos > 0 ? 2 : 0) else { return }
        let topic = String(decoding: body[2..<offset], as: UTF8.self)
        if qos > 0 {
            try? sendPacket(0x40, [body[offset], body[offset + 1]])
            offset += 2
        }
        messages.append(Message(topic: topic, payload: Array(body[offset...]), qos: qos, retain: first & 1 == 1))
    }

    // MARK: Sockets

    private static func string(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        return [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
    }

    static func connectLoopback(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw TestSupportError("connect to 127.0.0.1:\(port) failed: \(message)")
        }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw TestSupportError("send failed: \(String(cString: strerror(errno)))")
            }
            sent += count
        }
    }

    /// Reads until the end of an HTTP head (`\r\n\r\n`); returns the head and the bytes after it.
    static func readHead(_ fd: Int32, timeout: Duration) throws -> (String, [UInt8]) {
        var received: [UInt8] = []
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            if let end = received.firstRange(of: separator) {
                return (String(decoding: received[..<end.lowerBound], as: UTF8.self), Array(received[end.upperBound...]))
            }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&descriptor, 1, 50) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { break }
            if count < 0 { if errno == EINTR { continue } else { break } }
            received += buffer[..<count]
        }
        throw TestSupportError("no HTTP response head within \(timeout); received: \(String(decoding: received, as: UTF8.self))")
    }
}

/// A plain HTTP/1.1 GET to 127.0.0.1:`port` (mosquitto's websockets listener serving its
/// `http_dir`): the status code, the head (status line and headers) and the body (as long as
/// its Content-Length, or until the server closes).
public func httpGet(port: Int, path: String = "/", timeout: Duration = .seconds(10)) throws -> (status: Int, head: String, body: [UInt8]) {
    let fd = try WebSocketMQTTClient.connectLoopback(port: port)
    defer { close(fd) }
    try WebSocketMQTTClient.send(fd, Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8))
    var (head, body) = try WebSocketMQTTClient.readHead(fd, timeout: timeout)
    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
    let length = head.lowercased().split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
        .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
    let deadline = ContinuousClock.now.advanced(by: timeout)
    var buffer = [UInt8](repeating: 0, count: 4096)
    while ContinuousClock.now < deadline, length.map({ body.count < $0 }) ?? true {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&descriptor, 1, 50) > 0 else { continue }
        let count = recv(fd, &buffer, buffer.count, 0)
        if count <= 0 { break }
        body += buffer[..<count]
    }
    return (status, head, body)
}
