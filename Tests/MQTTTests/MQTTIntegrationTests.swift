import Foundation
import MQTT
import Testing
import TestSupport

/// Every test that starts a real mosquitto lives in a suite nested here, so they run one at a
/// time (2 loaded cores); each test has its own broker, client ids and topic prefix.
@Suite(.serialized) struct MQTTIntegrationTests {}

/// A name no other test uses: `base-XXXXXXXX`.
func unique(_ base: String) -> String {
    "\(base)-\(UUID().uuidString.prefix(8).lowercased())"
}

/// The `MQTTConnectionEvent`s a probe saw, for failure messages.
func describe(_ probe: MQTTProbe) -> String {
    probe.events.all.map { "\($0)" }.joined(separator: "\n")
}
