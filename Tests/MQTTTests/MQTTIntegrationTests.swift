import Foundation
import MQTT
import Testing
import TestSupport

/// Every test that starts a real mosquitto lives in a suite nested here, so they run one at a
/// time (2 loaded cores); each test has its own broker, client ids and topic prefix.
@Suite(.serialized) struct MQTTIntegrationTests {}

/// A private broker, a subscriber on `prefix/#` and a connected publisher: the setup the
/// inline-handler and network-thread tests share. `prepare` runs on the subscriber before it
/// connects (an inline handler, `collect()`). The caller stops both probes and keeps `broker`
/// until then (its deinit stops mosquitto).
func subscriberAndPublisher(
    _ name: String, qos: MQTTQoS, prepare: (MQTTProbe) -> Void = { _ in }
) async throws -> (broker: MosquittoProcess, prefix: String, subscriber: MQTTProbe, publisher: MQTTProbe) {
    let broker = try MosquittoProcess()
    let prefix = unique(name)
    let subscriber = try MQTTProbe(port: broker.port, clientId: unique("sub"))
    let publisher = try MQTTProbe(port: broker.port, clientId: unique("pub"))
    prepare(subscriber)
    try subscriber.client.subscribe("\(prefix)/#", qos: qos)
    try subscriber.client.start()
    try publisher.client.start()
    #expect(await subscriber.waitSubscribed("\(prefix)/#"))
    #expect(await publisher.waitConnected())
    return (broker, prefix, subscriber, publisher)
}
