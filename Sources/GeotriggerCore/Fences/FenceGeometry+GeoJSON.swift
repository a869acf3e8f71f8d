extension FenceGeometry {
    /// Appends this geometry to `out` as a GeoJSON geometry object (RFC 7946):
    /// `{"type": KIND, "coordinates": ...}`, the type ``kindName``, positions `[lon, lat]` as
    /// the fence holds them (what ``FeatureReader`` reads back as the same geometry).
    public func writeGeoJSON(to out: inout [UInt8]) {
        JSONValue.append(#"{"type":"#, to: &out)
        JSONValue.writeString(kindName, to: &out)
        JSONValue.append(#","coordinates":"#, to: &out)
        switch self {
        case .points(let points):
            if points.count == 1 { Self.write(points[0], to: &out) } else { Self.write(points, to: &out) }
        case .lines(let lines):
            if lines.count == 1 { Self.write(lines[0], to: &out) } else { Self.writeList(lines, to: &out) { Self.write($0, to: &$1) } }
        case .polygons(let polygons):
            if polygons.count == 1 {
                Self.write(polygons[0], to: &out)
            } else {
                Self.writeList(polygons, to: &out) { Self.write($0, to: &$1) }
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func write(_ position: Coordinate, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        JSONValue.writeNumber(position.lon, to: &out)
        out.append(UInt8(ascii: ","))
        JSONValue.writeNumber(position.lat, to: &out)
        out.append(UInt8(ascii: "]"))
    }

    private static func write(_ positions: [Coordinate], to out: inout [UInt8]) {
        writeList(positions, to: &out) { write($0, to: &$1) }
    }

    private static func write(_ polygon: Polygon, to out: inout [UInt8]) {
        writeList([polygon.exterior] + polygon.holes, to: &out) { write($0, to: &$1) }
    }

    private static func writeList<T>(_ items: [T], to out: inout [UInt8], _ writeItem: (T, inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            writeItem(item, &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}
