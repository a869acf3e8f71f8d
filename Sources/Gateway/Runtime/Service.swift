/// A long-running part of the gateway (MQTT connection, gpsd reader, monitors, outbox...).
public protocol Service: Sendable {
    /// A short name for log lines.
    var name: String { get }
    /// Runs until the service is shut down or fails.
    func run() async throws
    /// Asks the service to finish its work and return from `run()`. Called in the reverse of the
    /// order services were given to the ``ServiceGroup``, each awaited before the next for at
    /// most ``ServiceGroup/Timing/shutdownDeadline`` (then the group goes on without it), so
    /// every wait in it must be bounded below that; a `run()` still going a grace period after
    /// the last shutdown is cancelled, so its waits must end on cancellation.
    func shutdown() async
}
