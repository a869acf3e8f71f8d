/// The relations between a fix's accuracy circle and a buffered fence that ArcGIS geotriggers use
/// (`useGeometryWithAccuracy`): the circle touches the buffered fence, or lies inside it.
///
/// Both follow from the distance to the buffered boundary, `signedDistance - buffer` (see
/// ``PreparedFence``), through the bounded query, so a fence far from the circle costs little.
extension PreparedFence {
    /// Signed distance in metres from `p` to the boundary of this fence grown by `buffer`
    /// (negative inside): exact when its magnitude is at most `limit`, otherwise a value of the
    /// right sign beyond `limit`.
    public func bufferedDistance(to p: PreparedPoint, buffer: Double, within limit: Double) -> Double {
        let s = signedDistance(to: p, within: Swift.max(0, limit + buffer))
        return s - buffer
    }

    /// True if the circle of `radius` metres around `centre` reaches the fence grown by
    /// `buffer`: `signedDistance - buffer <= radius`. With radius 0 this is "the point is inside".
    public func circleIntersects(_ centre: PreparedPoint, radius: Double, buffer: Double) -> Bool {
        let reach = Swift.max(0, radius) + buffer
        return signedDistance(to: centre, within: Swift.max(0, reach)) <= reach
    }

    /// True if the whole circle of `radius` metres around `centre` lies inside the fence grown by
    /// `buffer`: `signedDistance - buffer <= -radius` (always false for a radius larger than the
    /// depth plus the buffer).
    public func circleIsInside(_ centre: PreparedPoint, radius: Double, buffer: Double) -> Bool {
        let margin = buffer - Swift.max(0, radius)
        return signedDistance(to: centre, within: abs(margin)) <= margin
    }
}
