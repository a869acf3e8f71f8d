import Foundation

/// What the kernel says about this process's threads and about the TCP sockets on a port,
/// for the failure messages of tests where a thread may be stuck (read from /proc).
public enum KernelView {
    /// Each thread of this process named `name`: its wait channel and its current system call
    /// (`/proc/self/task/TID/wchan` and `syscall`: the number, then the arguments, the first
    /// being the file descriptor of a read or poll).
    public static func threads(named name: String) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        let lines = tasks.sorted().compactMap { tid -> String? in
            guard read("/proc/self/task/\(tid)/comm") == name else { return nil }
            let syscall = read("/proc/self/task/\(tid)/syscall").split(separator: " ").prefix(3).joined(separator: " ")
            return "thread \(tid): wchan \(read("/proc/self/task/\(tid)/wchan")), syscall \(syscall)"
        }
        return lines.isEmpty ? "no thread named \(name)" : lines.joined(separator: "; ")
    }

    /// The TCP sockets (IPv4 and IPv6, any process) with `port` at either end: local and
    /// remote port, state, the bytes in the send and receive queues, and the descriptor when
    /// the socket is this process's.
    public static func tcpSockets(port: Int) -> String {
        var descriptors: [String: String] = [:]  // socket inode -> fd
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
               target.hasPrefix("socket:[") {
                descriptors[String(target.dropFirst(8).dropLast())] = fd
            }
        }
        let states = ["01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
                      "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"]
        func portOf(_ address: Substring) -> Int? { address.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
        var lines: [String] = []
        for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
            for row in read(file).split(separator: "\n").dropFirst() {
                let fields = row.split(separator: " ")
                guard fields.count > 4, let local = portOf(fields[1]), let remote = portOf(fields[2]),
                      local == port || remote == port else { continue }
                let queues = fields[4].split(separator: ":").map { Int($0, radix: 16) ?? -1 }
                let owner = fields.count > 9 ? descriptors[String(fields[9])].map { " (our fd \($0))" } ?? "" : ""
                lines.append("\(file.hasSuffix("6") ? "tcp6" : "tcp") \(local)->\(remote) \(states[String(fields[3])] ?? String(fields[3]))"
                             + " tx \(queues.first ?? -1) rx \(queues.last ?? -1)\(owner)")
            }
        }
        return lines.isEmpty ? "no TCP socket on port \(port)" : lines.joined(separator: "; ")
    }

    private static func read(_ path: String) -> String {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
