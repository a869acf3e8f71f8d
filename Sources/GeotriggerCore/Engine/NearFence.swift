/// One of the fences nearest to a device in one trigger (``EngineSnapshot/nearestFences(to:trigger:count:)``),
/// so the gateway can hand a phone the few fences around it rather than all of them.
public struct NearFence: Sendable, Equatable {
    /// The fence's position in ``EngineSnapshot/fences``.
    public var fence: Int
    /// The fence's effective buffer in metres in that trigger (its `properties.buffer`, else the
    /// trigger's, else the layer's).
    public var buffer: Double
    /// Metres from the point to the buffered fence's boundary, `signedDistance - buffer`
    /// (negative inside; see ``PreparedFence``).
    public var distance: Double

    public init(fence: Int, buffer: Double, distance: Double) {
        self.fence = fence
        self.buffer = buffer
        self.distance = distance
    }

    /// Nearest first; at the same distance, the lower fence number first.
    static func nearerFirst(_ a: NearFence, _ b: NearFence) -> Bool {
        a.distance < b.distance || (a.distance == b.distance && a.fence < b.fence)
    }
}
