import Testing
@testable import GeotriggerCore

/// Reads `bytes` as a file through `FenceLayerParser.parse(file:layer:chunkSize:reader:)`,
/// recording the offsets asked for.
private final class ByteFile: @unchecked Sendable {
    let bytes: [UInt8]
    var offsets: [Int] = []
    var failAt: Int?

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(_ offset: Int, _ buffer: UnsafeMutableRawBufferPointer) throws(FenceError) -> Int {
        offsets.append(offset)
        if let failAt, offset >= failAt { throw FenceError(file: "f.geojson", message: "cannot read: Input/output error") }
        let n = max(0, min(buffer.count, bytes.count - offset))
        for i in 0..<n { buffer[i] = bytes[offset + i] }
        return n
    }

    /// True if the reader was only ever asked to go forward (no whole-text fallback).
    var readForwardOnly: Bool { zip(offsets, offsets.dropFirst()).allSatisfy { $0 < $1 } }
}

private func streamed(_ bytes: [UInt8], file: String, layer: String, chunkSize: Int) throws -> (
    layer: FenceLayer, errors: [FenceError], forwardOnly: Bool
) {
    let source = ByteFile(bytes)
    let (l, e) = try FenceLayerParser.parse(file: file, layer: layer, chunkSize: chunkSize) { offset, buffer throws(FenceError) in
        try source.read(offset, buffer)
    }
    return (l, e, source.readForwardOnly)
}

private let chunkSizes = [1, 3, 64, 4096, FenceFileStream.defaultChunkSize]

@Suite struct FenceFileStreamTests {
    /// Every fixture and shipped layer, through tiny and default chunks: the same layer and the
    /// same messages as parsing the whole text.
    @Test(arguments: chunkSizes)
    func filesGiveTheSameLayerAndMessagesAsTheWholeText(chunkSize: Int) throws {
        var paths: [(path: String, layer: String)] = FenceLayerParserTests.badFiles.map {
            ("\(fixturesFolder)/fences-bad/\($0.name).geojson", $0.name)
        }
        let shipped = String(fixturesFolder.dropLast("/Tests/Fixtures".count)) + "/fences"
        paths += ["fleet", "garden-poi", "garden-sections"].map { ("\(shipped)/\($0).geojson", $0) }
        paths.append(("\(fixturesFolder)/geometry/nyc-taxi-zones.geojson", "nyc"))
        paths.append(("\(fixturesFolder)/geometry/synthetic.geojson", "synthetic"))
        for (path, layer) in paths where chunkSize > 1 || !path.hasSuffix("nyc-taxi-zones.geojson") {
            let bytes = try readFileBytes(path)
            let whole = FenceLayerParser.parse(bytes, file: path, layer: layer)
            let stream = try streamed(bytes, file: path, layer: layer, chunkSize: chunkSize)
            #expect(stream.layer == whole.layer, "\(path)")
            #expect(stream.errors.map(\.description) == whole.errors.map(\.description), "\(path)")
            #expect(stream.layer.prepared.count == stream.layer.fences.count, "\(path)")
        }
    }

    /// Texts at the edges of the plain shape: each gives what the whole-text parse gives.
    static let texts: [String] = [
        #"{"type": "FeatureCollection", "features": []}"#,
        "\u{FEFF}" + #"{"type": "FeatureCollection", "features": []}"#,
        #" {} "#,
        #"{"features": [], "type": "FeatureCollection"}"#,
        #"{"type": "FeatureCollection", "features": [1, "x", null, true, [], {}, -2.5e3]}"#,
        #"{"type": "FeatureCollection", "features": [{"type": "Feature", "id": "a\"]}", "properties": {"name": "[{\\"}, "geometry": {"type": "Point", "coordinates": [1, 2]}}]}"#,
        #"{"type": "FeatureCollection", "features": [], }"#,
        #"{"type": "FeatureCollection", "features": [1, ]}"#,
        #"{"type": "FeatureCollection", "features": [1 2]}"#,
        #"{"type": "FeatureCollection", "features": [], "type": "x"}"#,
        #"{"type": "FeatureCollection", "features": 7}"#,
        #"{"type": "FeatureCollection", "features": [{"a": 1, "a": 2}]}"#,
        #"{"type": "FeatureCollection", "features": []} x"#,
        #"{"type": "FeatureCollection", "features": [{"type": "Feature"]}"#,
        #"{"type": "FeatureCollection", "features": ["#,
        #"{"type": "FeatureCollection", "features": [tru]}"#,
        #"{"type": "FeatureCollection", "features": [1e]}"#,
        #"{"type": "FeatureCollection", "features": ["\u{0001}"]}"#,
        #"{"type": "FeatureCollection", "features": ["\uD800"]}"#,
        #"{"type": "FeatureCollection", "features": [], "geotrigger": [1]}"#,
        #"{'type': "FeatureCollection", "features": []}"#,
        #"{"type": "FeatureCollection", /* c */ "features": []}"#,
        "[1, 2]",
        "",
        "  ",
        "\"text\"",
        "{\"type\": \"FeatureCollection\",\r\n \"features\": [\u{0B}]}",
        "{\"type\": \"FeatureCollection\", \"features\": [\"\u{00E9}\", \"\u{1F600}\"]}",
        "{\"type\": \"FeatureCollection\", \"features\": [\"\u{00E9}\" \u{00A0}]}",
        // Nesting at the limit and one beyond (512 levels in all, counting the root and `features`).
        #"{"type": "FeatureCollection", "features": ["# + String(repeating: "[", count: 510) + String(repeating: "]", count: 510) + "]}",
        #"{"type": "FeatureCollection", "features": ["# + String(repeating: "[", count: 511) + String(repeating: "]", count: 511) + "]}",
        #"{"type": "FeatureCollection", "geotrigger": "# + String(repeating: "[", count: 511) + String(repeating: "]", count: 511) + #", "features": []}"#,
        #"{"type": "FeatureCollection", "geotrigger": "# + String(repeating: "[", count: 512) + String(repeating: "]", count: 512) + #", "features": []}"#,
    ]

    @Test(arguments: [1, 3, 1000])
    func edgeTextsGiveWhatTheWholeTextGives(chunkSize: Int) throws {
        for text in Self.texts {
            let bytes = Array(text.utf8)
            let whole = FenceLayerParser.parse(bytes, file: "f.geojson", layer: "f")
            let stream = try streamed(bytes, file: "f.geojson", layer: "f", chunkSize: chunkSize)
            #expect(stream.layer == whole.layer, "\(text.prefix(80))")
            #expect(stream.errors.map(\.description) == whole.errors.map(\.description), "\(text.prefix(80))")
        }
    }

    /// A valid file is read once, forward, in chunks (never read whole a second time); a file
    /// with a syntax error is read again from the start for the located message.
    @Test func validFilesAreReadOnceForward() throws {
        let valid = try readFileBytes("\(fixturesFolder)/geometry/nyc-taxi-zones.geojson")
        let good = try streamed(valid, file: "nyc.geojson", layer: "nyc", chunkSize: 4096)
        #expect(good.forwardOnly)
        #expect(good.errors.isEmpty)
        #expect(good.layer.fences.count == 263)

        let invalid = try readFileBytes("\(fixturesFolder)/fences-bad/invalid-json.geojson")
        let bad = try streamed(invalid, file: "bad.geojson", layer: "bad", chunkSize: 16)
        #expect(!bad.forwardOnly)
        #expect(bad.errors.count == 1 && bad.errors[0].location != nil)
    }

    @Test func readErrorsAreThrown() {
        let source = ByteFile(Array(#"{"type": "FeatureCollection", "features": [1, 2, 3]}"#.utf8))
        source.failAt = 8
        #expect(throws: FenceError(file: "f.geojson", message: "cannot read: Input/output error")) {
            _ = try FenceLayerParser.parse(file: "f.geojson", layer: "f", chunkSize: 8) { offset, buffer throws(FenceError) in
                try source.read(offset, buffer)
            }
        }
    }
}

@Suite struct FenceLayerPreparedTests {
    private static let text = #"""
        {"type": "FeatureCollection", "features": [
          {"type": "Feature", "id": "a", "properties": {}, "geometry": {"type": "Polygon",
           "coordinates": [[[-119.71, 34.45], [-119.70, 34.45], [-119.70, 34.46], [-119.71, 34.45]]]}},
          {"type": "Feature", "id": "b", "properties": {"buffer": 10}, "geometry": {"type": "Point", "coordinates": [-119.7, 34.4]}}
        ]}
        """#

    /// The engine takes the fences the parser prepared instead of preparing them again.
    @Test func snapshotReusesTheParsersPreparedFences() throws {
        let (layer, errors) = FenceLayerParser.parse(Array(Self.text.utf8), file: "f.geojson", layer: "f")
        #expect(errors.isEmpty)
        #expect(layer.prepared.count == 2)
        let snapshot = try EngineSnapshot(layers: [layer], configTriggers: nil)
        #expect(snapshot.fences.count == 2)
        for (made, used) in zip(layer.prepared, snapshot.fences) { #expect(made === used) }
    }

    /// A fence changed after parsing is prepared afresh (the parser's one is stale).
    @Test func changedFencesArePreparedAgain() throws {
        var (layer, _) = FenceLayerParser.parse(Array(Self.text.utf8), file: "f.geojson", layer: "f")
        layer.fences[1].geometry = .points([Coordinate(lat: 34.3, lon: -119.6)])
        #expect(layer.preparedFence(at: 1) == nil)
        let snapshot = try EngineSnapshot(layers: [layer], configTriggers: nil)
        #expect(snapshot.fences[0] === layer.prepared[0])
        #expect(snapshot.fences[1] !== layer.prepared[1])
        #expect(snapshot.fences[1].fence == layer.fences[1])
        #expect(layer == FenceLayer(name: "f", file: "f.geojson", fences: layer.fences))
    }
}
