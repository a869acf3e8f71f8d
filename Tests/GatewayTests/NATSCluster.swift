import Foundation
import TestSupport

/// A three-node `nats-server` cluster on free loopback ports for tests: each node with its
/// own temp JetStream store, MQTT (JetStream-backed, `stream_replicas: 3`) and the repository's
/// `deploy/nats/partition.conf` mapping; launched directly with `posix_spawn` so each PID is
/// the server's, readiness polled on the MQTT port, stopped (or killed) by that PID.
final class NATSCluster: @unchecked Sendable {
    struct Node {
        var name: String
        var clientPort: Int
        var clusterPort: Int
        var mqttPort: Int
        var configPath: String
        var logPath: String
    }

    static let executable = "/usr/sbin/nats-server"
    let directory: TemporaryDirectory
    let nodes: [Node]
    private let lock = NSLock()
    private var pids: [Int: pid_t] = [:]

    /// Writes the configs (nothing started yet); `authorization` also includes the repository's
    /// `deploy/nats/authorization.conf` (its users and permissions) in every node.
    init(count: Int = 3, authorization: Bool = false) throws {
        directory = try TemporaryDirectory(prefix: "geotrigger-nats")
        var includes = ["partition.conf"]
        if authorization { includes.append("authorization.conf") }
        for file in includes {
            try FileManager.default.copyItem(atPath: repositoryRoot + "/deploy/nats/" + file, toPath: directory.file(file))
        }
        var nodes: [Node] = []
        for i in 0..<count {
            nodes.append(Node(name: "node-\(i)", clientPort: try FreePort.next(), clusterPort: try FreePort.next(),
                              mqttPort: try FreePort.next(), configPath: directory.file("node-\(i).conf"),
                              logPath: directory.file("node-\(i).log")))
        }
        let routes = nodes.map { "    nats-route://127.0.0.1:\($0.clusterPort)" }.joined(separator: "\n")
        for node in nodes {
            _ = try directory.write(node.configPath.split(separator: "/").last.map(String.init)!, """
                server_name: \(node.name)
                listen: 127.0.0.1:\(node.clientPort)
                jetstream { store_dir: "\(directory.file("store-" + node.name))", max_memory_store: 64MB, max_file_store: 256MB }
                cluster {
                  name: geotrigger-test
                  listen: 127.0.0.1:\(node.clusterPort)
                  routes: [
                \(routes)
                  ]
                }
                mqtt {
                  listen: 127.0.0.1:\(node.mqttPort)
                  stream_replicas: \(min(3, count))
                  # Redeliver unacknowledged QoS 1 messages sooner than the deploy configs (30 s).
                  ack_wait: "5s"
                }
                \(includes.map { "include \($0)" }.joined(separator: "\n"))
                """)
        }
        self.nodes = nodes
    }

    /// Every node's MQTT address, starting with node `first` (a gateway's `hosts` list).
    func mqttHosts(startingAt first: Int = 0) -> [String] {
        (0..<nodes.count).map { "127.0.0.1:\(nodes[(first + $0) % nodes.count].mqttPort)" }
    }

    /// Starts every node and waits until all MQTT ports listen.
    func start(timeout: Duration = .seconds(60)) throws {
        for index in nodes.indices { try spawn(index) }
        let ready = pollBlocking(timeout: timeout) { nodes.allSatisfy { FreePort.isListening($0.mqttPort) } }
        if !ready { throw TestSupportError("NATS cluster did not listen on MQTT within \(timeout):\n\(logs)") }
    }

    /// SIGKILL to node `index` (a node crash) and reap it.
    func kill(_ index: Int) {
        signal(index, SIGKILL)
    }

    /// SIGTERM to every running node, SIGKILL after a while.
    func stop() {
        for index in nodes.indices { signal(index, SIGTERM) }
    }

    var logs: String {
        nodes.map { "--- \($0.name)\n" + ((try? String(contentsOfFile: $0.logPath, encoding: .utf8))?.suffix(3000) ?? "") }
            .joined(separator: "\n")
    }

    private func signal(_ index: Int, _ signal: Int32) {
        let pid: pid_t? = lock.withLock { pids.removeValue(forKey: index) }
        guard let pid else { return }
        Glibc.kill(pid, signal)
        var status: Int32 = 0
        let exited = pollBlocking(timeout: .seconds(15)) { waitpid(pid, &status, WNOHANG) == pid }
        if !exited {
            Glibc.kill(pid, SIGKILL)
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        }
    }

    private func spawn(_ index: Int) throws {
        let node = nodes[index]
        let child = try DirectSpawn.start(Self.executable, ["-c", node.configPath], logPath: node.logPath)
        lock.withLock { pids[index] = child }
    }

    deinit { stop() }
}
