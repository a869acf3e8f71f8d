import Testing
@testable import GeotriggerCore

/// The quick parse of a feature's text (``FeatureTextParser``) against the parse into values:
/// the same fences and the same messages, and the quick way really taken where it should be.
@Suite struct FeatureTextParserTests {
    static let square = "[[0, 0], [0.001, 0], [0.001, 0.001], [0, 0.001], [0, 0]]"
    static let hole = "[[0.0002, 0.0002], [0.0002, 0.0004], [0.0004, 0.0004], [0.0002, 0.0002]]"

    /// Features the quick way reads (geometry in positions).
    static let plain: [String] = [
        #"{"type": "Feature", "id": "a", "properties": {"name": "A"}, "geometry": {"type": "Polygon", "coordinates": [\#(square)]}}"#,
        #"{"type":"Feature","id":7,"properties":null,"geometry":{"type":"Polygon","coordinates":[\#(square),\#(hole)]}}"#,
        #"{"geometry": {"type": "Point", "coordinates": [13.4, 52.5, 34.5]}, "properties": {"id": "p", "buffer": 15}, "type": "Feature"}"#,
        #"{"type": "Feature", "id": "mp", "properties": {"buffer": 2}, "geometry": {"type": "MultiPoint", "coordinates": [[1, 2], [-180, -90], [180, 90]]}}"#,
        #"{"type": "Feature", "id": "l", "properties": {"buffer": 2}, "geometry": {"bbox": [0, 0, 1, 1], "type": "LineString", "coordinates": [[1e0, 2.5E-1], [-0.0, 3]], "crs": null}}"#,
        #"{"type": "Feature", "id": "ml", "properties": {"buffer": 2}, "geometry": {"type": "MultiLineString", "coordinates": [[[1, 2], [1, 3]], [[2, 2], [2, 3]]]}}"#,
        #"{"type": "Feature", "id": "mpg", "geometry": {"type": "MultiPolygon", "coordinates": [[\#(square)], [\#(square), \#(hole)]]}}"#,
        "{\n\t\"type\" : \"Feature\" , \"id\" : \"ws\" , \"geometry\" : { \"type\" : \"Point\" , \"coordinates\" : [ 1 , 2 ] } , \"properties\" : { \"buffer\" : 1 } }",
        // Defects found after the positions: the same checks on the same positions.
        #"{"type": "Feature", "id": "open", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}}"#,
        #"{"type": "Feature", "id": "short", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]}}"#,
        #"{"type": "Feature", "id": "bow", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}}"#,
        #"{"type": "Feature", "id": "flat", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [2, 2], [0, 0]]]}}"#,
        #"{"type": "Feature", "id": "l1", "properties": {"buffer": 2}, "geometry": {"type": "MultiLineString", "coordinates": [[[1, 2], [1, 3]], [[2, 2]]]}}"#,
        #"{"type": "Feature", "id": "mpgbad", "geometry": {"type": "MultiPolygon", "coordinates": [[\#(square)], [[[0, 0], [1, 0], [0, 0]]]]}}"#,
        #"{"type": "Feature", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"buffer": -1, "name": 3}}"#,
        #"{"type": "Point", "id": "", "geometry": {"type": "Point", "coordinates": [1, 2]}}"#,
        #"{"type": "Feature", "id": "dup", "geometry": {"type": "Point", "coordinates": [1, 2]}, "properties": {"buffer": 1}}"#,
        #"{"type": "Feature", "id": "dup", "properties": {"name": "again", "buffer": 1}, "geometry": {"type": "Point", "coordinates": [3, 4]}}"#,
        #"{"type": "Feature", "id": "nob", "geometry": {"type": "Point", "coordinates": [1, 2]}}"#,
    ]

    /// Features left to the parse into values (a defect in the positions, or not the plain case).
    static let other: [String] = [
        #"{"type": "Feature", "id": "lat", "geometry": {"type": "Point", "coordinates": [10, 95]}}"#,
        #"{"type": "Feature", "id": "lon", "geometry": {"type": "Point", "coordinates": [190, 5]}}"#,
        #"{"type": "Feature", "id": "inf", "geometry": {"type": "Point", "coordinates": [1e400, 5]}}"#,
        #"{"type": "Feature", "id": "one", "geometry": {"type": "Point", "coordinates": [1]}}"#,
        #"{"type": "Feature", "id": "str", "geometry": {"type": "Point", "coordinates": [1, "2"]}}"#,
        #"{"type": "Feature", "id": "alt", "geometry": {"type": "Point", "coordinates": [1, 2, null]}}"#,
        #"{"type": "Feature", "id": "nest", "geometry": {"type": "Polygon", "coordinates": [[1, 2], [3, 4]]}}"#,
        #"{"type": "Feature", "id": "deep", "geometry": {"type": "LineString", "coordinates": [[[1, 2]], [[3, 4]]]}}"#,
        #"{"type": "Feature", "id": "empty", "geometry": {"type": "MultiPolygon", "coordinates": []}}"#,
        #"{"type": "Feature", "id": "norings", "geometry": {"type": "Polygon", "coordinates": []}}"#,
        #"{"type": "Feature", "id": "emptyring", "geometry": {"type": "Polygon", "coordinates": [[]]}}"#,
        #"{"type": "Feature", "id": "emptyline", "properties": {"buffer": 1}, "geometry": {"type": "LineString", "coordinates": []}}"#,
        #"{"type": "Feature", "id": "order", "geometry": {"coordinates": [1, 2], "type": "Point"}}"#,
        #"{"type": "Feature", "id": "gc", "geometry": {"type": "GeometryCollection", "geometries": []}}"#,
        #"{"type": "Feature", "id": "circle", "geometry": {"type": "Circle", "coordinates": [1, 2]}}"#,
        #"{"type": "Feature", "id": "notype", "geometry": {"coordinates": [1, 2]}}"#,
        #"{"type": "Feature", "id": "nocoords", "geometry": {"type": "Point"}}"#,
        #"{"type": "Feature", "id": "numtype", "geometry": {"type": 5, "coordinates": [1, 2]}}"#,
        #"{"type": "Feature", "id": "emptygeom", "geometry": {}}"#,
        #"{"type": "Feature", "id": "many", "geometry": {"type": "LineString", "coordinates": [\#((1...17).map { "[1, \($0)]" }.joined(separator: ", "))]}}"#,
        #"{"type": "Feature", "id": "nullgeom", "geometry": null}"#,
        #"{"type": "Feature", "id": "arraygeom", "geometry": [1]}"#,
        #"{"type": "Feature", "id": "nogeom"}"#,
        #"{}"#,
        #"[1, 2]"#,
        #""text""#,
    ]

    /// The fences and messages of `features` read as a file through the stream (the quick way
    /// where it applies) and as a whole text (values only).
    static func both(_ features: [String], maxVertices: Int = 16) throws -> (stream: [String], whole: [String], streamLayer: FenceLayer, wholeLayer: FenceLayer) {
        let bytes = Array((#"{"type": "FeatureCollection", "features": ["# + features.joined(separator: ",\n") + "]}").utf8)
        let whole = FenceLayerParser.parse(bytes, file: "f.geojson", layer: "f", maxVertices: maxVertices)
        let stream = try FenceLayerParser.parse(file: "f.geojson", layer: "f", chunkSize: 7, maxVertices: maxVertices) {
            offset, buffer throws(FenceError) in
            let n = max(0, min(buffer.count, bytes.count - offset))
            for i in 0..<n { buffer[i] = bytes[offset + i] }
            return n
        }
        return (stream.errors.map(\.description), whole.errors.map(\.description), stream.layer, whole.layer)
    }

    @Test func quickAndValueParsesAgree() throws {
        let (stream, whole, streamLayer, wholeLayer) = try Self.both(Self.plain + Self.other)
        #expect(stream == whole)
        #expect(streamLayer == wholeLayer)
        #expect(streamLayer.fences.count >= 8)
        #expect(whole.count >= 20)
    }

    /// Each feature alone, too (a defect of one can hide another's behind it otherwise).
    @Test(arguments: plain + other)
    func eachFeatureAgrees(feature: String) throws {
        let (stream, whole, streamLayer, wholeLayer) = try Self.both([feature])
        #expect(stream == whole)
        #expect(streamLayer == wholeLayer)
        #expect(streamLayer.prepared.count == streamLayer.fences.count)
    }

    @Test func theQuickWayIsTakenForPlainFeaturesOnly() {
        var scratch: [Coordinate] = []
        func quick(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            return bytes.withUnsafeBufferPointer {
                FeatureTextParser.parse($0, depth: 2, maxVertices: 16, scratch: &scratch)?.geometry != nil
            }
        }
        for text in Self.plain { #expect(quick(text), "\(text)") }
        for text in Self.other { #expect(!quick(text), "\(text)") }
    }

    /// In place in the stream's window a feature may be followed by more text, or cut short
    /// by the window's end: a cut feature is never read (the stream reads on and asks again).
    @Test func aFeatureIsReadInPlaceOnlyWhenWhole() {
        var scratch: [Coordinate] = []
        for text in Self.plain {
            let bytes = Array(text.utf8)
            let followed = bytes + Array(",\n{\"type\": \"Feature\"}]}".utf8)
            let length = followed.withUnsafeBufferPointer {
                FeatureTextParser.parse(prefixOf: $0, depth: 2, maxVertices: 16, scratch: &scratch)?.length
            }
            #expect(length == bytes.count, "\(text)")
            for cut in 0..<bytes.count {
                let read = bytes.withUnsafeBufferPointer {
                    FeatureTextParser.parse(prefixOf: UnsafeBufferPointer(rebasing: $0[..<cut]), depth: 2, maxVertices: 16, scratch: &scratch)
                }
                #expect(read == nil, "\(text) cut at \(cut)")
            }
        }
    }

    @Test func positionsAreReadExactly() {
        var scratch: [Coordinate] = []
        let text = #"{"type": "Feature", "id": "a", "geometry": {"type": "Polygon", "coordinates": [[[13.4050001, 52.5200002], [13.4060003, -52.5200004], [1e-7, 12345678901234567890e-18], [13.4050001, 52.5200002]], [[1, 2], [3, 4]]]}}"#
        let bytes = Array(text.utf8)
        let parsed = bytes.withUnsafeBufferPointer { FeatureTextParser.parse($0, depth: 2, maxVertices: 10, scratch: &scratch) }
        let expected: ParsedGeometry = .polygon([
            [Coordinate(lat: 52.5200002, lon: 13.4050001), Coordinate(lat: -52.5200004, lon: 13.4060003),
             Coordinate(lat: 12.345678901234567890, lon: 1e-7), Coordinate(lat: 52.5200002, lon: 13.4050001)],
            [Coordinate(lat: 2, lon: 1), Coordinate(lat: 4, lon: 3)],
        ])
        #expect(parsed?.geometry == expected)
        #expect(parsed?.feature.keys == ["type", "id", "geometry"])
    }
}
