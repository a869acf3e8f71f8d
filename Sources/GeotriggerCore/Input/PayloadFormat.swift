/// The payload format of an MQTT feed (README "Inputs").
public enum PayloadFormat: String, Sendable, CaseIterable {
    /// OwnTracks `_type: location` messages on `owntracks/USER/DEVICE`.
    case owntracks
    /// `{"lat", "lon", "time", "accuracy", "speed", "heading"}`.
    case json
}
