import Foundation

/// Loopback TCP ports nobody listens on.
public enum FreePort {
    /// A loopback port nobody has bound, outside the kernel's ephemeral range.
    ///
    /// A port from that range (what binding port 0 returns) can go to another test's bind of
    /// port 0, or become the local port of some client's connection, before the caller starts
    /// its server; and a client retrying a loopback port nobody listens on can even connect to
    /// itself (TCP simultaneous open). Seen once: a gateway started before its gpsd "reached"
    /// the not yet started gpsd's port. So the port is drawn at random below the range (or above
    /// it) and checked by binding it; another test drawing the same one is still possible, but
    /// rare among thousands.
    public static func next() throws -> Int {
        let (low, high) = ephemeralRange()
        let candidates = low > 12_000 ? 10_000..<low : (high + 1)..<65_536
        for _ in 0..<200 {
            let port = Int.random(in: candidates)
            if try bindable(port) { return port }
        }
        throw TestSupportError("no free loopback port in \(candidates) after 200 tries")
    }

    /// `net.ipv4.ip_local_port_range` (Linux's default when unreadable).
    static func ephemeralRange() -> (Int, Int) {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let numbers = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        return numbers.count == 2 ? (numbers[0], numbers[1]) : (32_768, 60_999)
    }

    /// Whether 127.0.0.1:`port` can be bound right now (it is left unbound).
    static func bindable(_ port: Int) throws -> Bool {
        guard let result = withLoopbackSocket(port: port, { bind($0, $1, $2) == 0 }) else {
            throw TestSupportError("socket() failed: \(String(cString: strerror(errno)))")
        }
        return result
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
    public static func isListening(_ port: Int) -> Bool {
        withLoopbackSocket(port: port) { connect($0, $1, $2) == 0 } ?? false
    }

    /// `body` with a new TCP socket and the address 127.0.0.1:`port` (nil if no socket).
    private static func withLoopbackSocket(
        port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool
    ) -> Bool? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }
}
