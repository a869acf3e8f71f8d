/// The payload format of an MQTT feed (docs/topics-and-payloads.md "Inputs").
public enum PayloadFormat: String, Sendable, CaseIterable {
    /// OwnTracks `_type: location` messages on `owntracks/USER/DEVICE`.
    case owntracks
    /// `{"lat", "lon", "time", "accuracy", "speed", "heading"}`.
    case json
}
