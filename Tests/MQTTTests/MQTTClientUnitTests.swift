import MQTT
import Testing
import TestSupport

@Suite struct MQTTClientUnitTests {
    @Test func backoffDoublesUpToTheMaximum() {
        let backoff = MQTTConfiguration.Backoff(minimum: .seconds(1), maximum: .seconds(30))
        #expect((0..<7).map { backoff.delay(attempt: $0) } == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
        #expect(backoff.delay(attempt: 10_000) == .seconds(30))
    }

    @Test func stoppingAnUnstartedClientEndsItsSequences() async throws {
        let client = try MQTTClient(MQTTConfiguration(port: 1, clientId: unique("idle")))
        client.stop()
        var iterator = client.messages.makeAsyncIterator()
        #expect(await iterator.next() == nil)
        var events = client.connectionEvents.makeAsyncIterator()
        #expect(await events.next() == nil)
    }

    /// Nothing listens on the port: the client keeps failing and retrying, and `stop()` still
    /// returns (it interrupts the backoff wait).
    @Test(.timeLimit(.minutes(5))) func unreachableBrokerIsRetriedAndStopInterruptsTheBackoff() async throws {
        let port = try FreePort.next()
        let probe = try MQTTProbe(port: port, clientId: unique("nobody")) {
            $0.reconnect = .init(minimum: .milliseconds(50), maximum: .seconds(60))
        }
        try probe.client.start()
        let failures = {
            probe.events.all.filter { if case .connectFailed = $0 { true } else { false } }.count
        }
        #expect(await poll { failures() >= 3 }, "\(describe(probe))")
        // The backoff is now long (up to 60 s); stop must not wait for it.
        #expect(await poll { probe.events.all.contains { $0 == .reconnecting(after: .milliseconds(400)) } })
        probe.stop()
        #expect(!probe.client.isConnected)
    }
}
