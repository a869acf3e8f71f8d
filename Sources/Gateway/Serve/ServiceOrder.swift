/// The gateway's services in the order they start; the ``ServiceGroup`` stops them in the
/// reverse one. ``GatewayServer/build(_:configFile:logger:ownsProcess:signals:)`` hands the
/// group its services in this order (``ServiceList``), and docs/architecture.md "Start and
/// shutdown" lists the same (`ServiceOrderTests` compares them).
///
/// Why this order, read backwards as the shutdown: gpsd stops; the main broker's connection
/// publishes `stopped` and disconnects, so nothing more is read (what the broker did not
/// deliver stays in the persistent session); only then do the control plane, the runtime
/// fences and the monitors handle what was read, the committer commit it and the outboxes
/// stop, the upstream connection last (docs/configuration.md "Durability": a graceful stop loses no update).
enum ServiceRole: CaseIterable, Sendable {
    case remoteConnection
    case localOutbox
    case remoteOutbox
    case committer
    case monitors
    case runtimeFences
    case expectations
    case trips
    case queries
    case control
    case localConnection
    case journalRetention
    case threadPriorities
    case occupancy
    case status
    case gpsdFeeds

    /// The name of the role's service (``Service/name``, as the log lines give it);
    /// `gpsd-FEED` for the gpsd feeds, one per feed.
    var serviceName: String {
        switch self {
        case .remoteConnection: "mqtt-remote"
        case .localOutbox: "outbox-local"
        case .remoteOutbox: "outbox-remote"
        case .committer: "committer"
        case .monitors: "monitors"
        case .runtimeFences: "runtime-fences"
        case .expectations: "expectations"
        case .trips: "trips"
        case .queries: "queries"
        case .control: "control"
        case .localConnection: "mqtt-local"
        case .journalRetention: "journal-retention"
        case .threadPriorities: "thread-priorities"
        case .occupancy: "occupancy"
        case .status: "status"
        case .gpsdFeeds: "gpsd-FEED"
        }
    }

    /// Whether `name` is the name of a service of this role.
    func names(_ name: String) -> Bool {
        self == .gpsdFeeds ? name.hasPrefix("gpsd-") : name == serviceName
    }
}

/// The services of a gateway by role, handed to the ``ServiceGroup`` in ``ServiceRole``'s
/// order whatever the order they were added in.
struct ServiceList {
    private var byRole: [ServiceRole: [any Service]] = [:]

    /// Adds `service` as (one of) `role`'s.
    mutating func add(_ role: ServiceRole, _ service: any Service) {
        assert(role.names(service.name), "service \(service.name) added as \(role.serviceName)")
        byRole[role, default: []].append(service)
    }

    /// Every service, in start order.
    var inStartOrder: [any Service] { ServiceRole.allCases.flatMap { byRole[$0] ?? [] } }
}
