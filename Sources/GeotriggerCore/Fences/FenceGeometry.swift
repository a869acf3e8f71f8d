/// A polygon with its holes. Rings are closed as in GeoJSON (first position == last).
public struct Polygon: Sendable, Equatable {
    public var exterior: [Coordinate]
    public var holes: [[Coordinate]]

    public init(exterior: [Coordinate], holes: [[Coordinate]] = []) {
        self.exterior = exterior
        self.holes = holes
    }
}

/// The geometry of one fence. Edges are straight in lon/lat (RFC 7946).
/// Multi-geometries and single ones share a case: a Polygon is `.polygons([p])`.
public enum FenceGeometry: Sendable, Equatable {
    case polygons([Polygon])
    case points([Coordinate])
    case lines([[Coordinate]])

    /// True for points and lines, which have no interior and need a buffer > 0.
    public var needsBuffer: Bool {
        if case .polygons = self { return false }
        return true
    }

    /// The GeoJSON-ish kind name, for messages ("Point needs a buffer > 0").
    public var kindName: String {
        switch self {
        case .polygons(let p): p.count == 1 ? "Polygon" : "MultiPolygon"
        case .points(let p): p.count == 1 ? "Point" : "MultiPoint"
        case .lines(let l): l.count == 1 ? "LineString" : "MultiLineString"
        }
    }
}
