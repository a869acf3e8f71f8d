/// An immutable spatial index over fence bounds, queried by a point and a radius in metres.
///
/// Each entry is a box plus a reach in metres (the largest buffer and exit margin any trigger
/// gives that fence); a query returns the entries whose box, grown by reach + radius, holds the point.
public struct FenceIndex: Sendable {
    struct Entry: Sendable {
        var bounds: GeoBounds
        var reach: Double
    }
    let entries: [Entry]

    /// Builds the index over `bounds[i]` with reach `reach[i]`; entry numbers are array positions.
    public init(bounds: [GeoBounds], reach: [Double]) {
        precondition(bounds.count == reach.count)
        entries = zip(bounds, reach).map { Entry(bounds: $0, reach: $1) }
    }

    public var count: Int { entries.count }

    /// Calls `body` with the number of every entry whose grown box holds `point`.
    public func query(_ point: Coordinate, radius: Double, _ body: (Int) -> Void) {
        for (i, e) in entries.enumerated() where e.bounds.expanded(by: e.reach + radius).contains(point) {
            body(i)
        }
    }
}
