// TEMPORARY: replaced by the geometry helper's EnclosingCircle and nearestFences.
public struct NearFence: Sendable, Equatable {
    public var fence: Int
    public var buffer: Double
    public var distance: Double
}

public struct EnclosingCircle: Sendable, Equatable {
    public var centre: Coordinate
    public var radius: Double
}

extension PreparedFence {
    public func enclosingCircle(buffer: Double) -> EnclosingCircle {
        let c = Coordinate(lat: (bounds.minLat + bounds.maxLat) / 2, lon: (bounds.minLon + bounds.maxLon) / 2)
        let r = Earth.distance(c, Coordinate(lat: bounds.maxLat, lon: bounds.maxLon))
        return EnclosingCircle(centre: c, radius: r + buffer)
    }
}

extension EngineSnapshot {
    func nearestFences(to point: Coordinate, watches: [Int32], count: Int) -> [NearFence] {
        var all: [NearFence] = []
        for f in fences.indices {
            forEachWatch(ofFence: f) { f, w, buffer in
                if watches.contains(Int32(w)) { all.append(NearFence(fence: f, buffer: buffer, distance: fences[f].signedDistance(to: point) - buffer)) }
            }
        }
        all.sort { ($0.distance, $0.fence) < ($1.distance, $1.fence) }
        return Array(all.prefix(count))
    }
}
