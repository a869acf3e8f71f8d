/// Reads one fence layer file (a GeoJSON FeatureCollection, RFC 7946) into a ``FenceLayer``,
/// collecting every defect of the file rather than stopping at the first.
///
/// The layer returned holds the features that are entirely valid, each already prepared
/// (``FenceLayer/prepared``, so the engine does not prepare it again); a caller that needs the
/// whole file (the gateway at start or on SIGHUP) treats any error as fatal for the file.
/// Given the live snapshot (`reusing`, a SIGHUP reload), a fence it has unchanged is not
/// prepared again: the layer holds the snapshot's own prepared fence, so an unchanged file
/// adds no second set of prepared fences beside the live one.
public enum FenceLayerParser {
    /// At most this many coordinate errors are listed per feature; the rest are counted.
    static let coordinateErrorsShown = 5

    /// `fences.maxVertices` by default: a fence with more positions is an error of its feature.
    public static let defaultMaxVertices = 100_000

    /// Parses the bytes of `file` (a path for messages) as the layer named `layer`; a feature
    /// with more than `maxVertices` positions is an error (and is not prepared).
    ///
    /// The `features` array is read one feature at a time: each is parsed, turned into a fence
    /// and dropped, so memory holds the text, the fences so far and one feature's values, never
    /// the whole file as values. Keeps no value locations (fence defects name the feature, and
    /// syntax errors carry their own line and column). `reusing`: see the streaming ``parse(file:layer:maxVertices:fileSize:reusing:progress:reader:)``.
    public static func parse(
        _ bytes: [UInt8], file: String, layer: String, maxVertices: Int = defaultMaxVertices, reusing previous: EngineSnapshot? = nil
    ) -> (layer: FenceLayer, errors: [FenceError]) {
        var collector = FeatureCollector(file: file, layer: layer, maxVertices: maxVertices, reusing: previous)
        let root: JSONValue
        do {
            root = try JSONReader.parseValue(bytes, file: file, dialect: .json, streaming: "features") {
                collector.add($0)
            }
        } catch {
            return (
                FenceLayer(name: layer, file: file, fences: []),
                [FenceError(file: file, location: error.location, message: error.message)]
            )
        }
        return finish(root, collector: &collector, featuresStreamed: true)
    }

    /// Reads `file` (a path for messages) through `reader` as the layer named `layer`, without
    /// ever holding the whole text: the file is read in chunks and each feature is parsed,
    /// turned into a fence and dropped. A file that is not plain well-formed JSON (or not of
    /// the usual FeatureCollection shape) is then read whole and parsed as
    /// ``parse(_:file:layer:)`` does, so every message is the same as for its bytes.
    ///
    /// `reader(offset, buffer)` reads up to `buffer.count` bytes at `offset` (0 at the end of
    /// the file) or throws the error to report for the file (which this rethrows).
    ///
    /// `progress(features, bytesRead)`, if given, is called every ``progressInterval`` features
    /// read and once at the end of the streamed read, with the features read so far and how
    /// far into the file the reads went (for a log of a long load).
    ///
    /// `fileSize`, if known, sizes the layer's arrays and the id table once a few thousand
    /// features tell how large a feature is (rather than letting them grow by doubling).
    ///
    /// `reusing`: the live snapshot on a reload, whose prepared fences are taken for the
    /// fences of this layer it has unchanged (see above); nil at start and for `check`.
    public static func parse(
        file: String, layer: String, maxVertices: Int = defaultMaxVertices, fileSize: Int? = nil,
        reusing previous: EngineSnapshot? = nil,
        progress: ((_ features: Int, _ bytesRead: Int) -> Void)? = nil,
        reader: @escaping (_ offset: Int, _ buffer: UnsafeMutableRawBufferPointer) throws(FenceError) -> Int
    ) throws(FenceError) -> (layer: FenceLayer, errors: [FenceError]) {
        try parse(
            file: file, layer: layer, chunkSize: FenceFileStream.defaultChunkSize, maxVertices: maxVertices, fileSize: fileSize,
            reusing: previous, progress: progress, reader: reader)
    }

    /// Features read before the layer is sized from `fileSize`.
    static let sizingSample = 4096

    /// Features between two calls of a parse's `progress`.
    public static let progressInterval = 256

    /// As above, reading `chunkSize` bytes at a time (tests use tiny chunks).
    static func parse(
        file: String, layer: String, chunkSize: Int, maxVertices: Int = defaultMaxVertices, fileSize: Int? = nil,
        reusing previous: EngineSnapshot? = nil,
        progress: ((_ features: Int, _ bytesRead: Int) -> Void)? = nil,
        reader: @escaping (_ offset: Int, _ buffer: UnsafeMutableRawBufferPointer) throws(FenceError) -> Int
    ) throws(FenceError) -> (layer: FenceLayer, errors: [FenceError]) {
        var collector = FeatureCollector(file: file, layer: layer, maxVertices: maxVertices, reusing: previous)
        var bytesRead = 0
        var stream = FenceFileStream(reader: { offset, buffer throws(FenceError) in
            let n = try reader(offset, buffer)
            bytesRead = max(bytesRead, offset + max(0, n))
            return n
        }, chunkSize: chunkSize)
        var featureBytes = 0
        let root = try stream.read { bytes, whole in
            guard let length = collector.add(bytes, whole: whole) else { return nil }
            featureBytes += length + 2  // and its separator, about
            if collector.count == sizingSample, let fileSize {
                collector.reserveCapacity(Int(Double(fileSize) / Double(featureBytes) * Double(sizingSample) * 1.05))
            }
            if let progress, collector.count % progressInterval == 0 { progress(collector.count, bytesRead) }
            return length
        }
        if let root {
            progress?(collector.count, bytesRead)
            return finish(root, collector: &collector, featuresStreamed: true)
        }
        // Not the plain shape: the whole text, for the exact messages.
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: FenceFileStream.defaultChunkSize)
        while true {
            let offset = bytes.count
            let result: Result<Int, FenceError> = chunk.withUnsafeMutableBytes { buffer in
                do throws(FenceError) {
                    return .success(try reader(offset, buffer))
                } catch {
                    return .failure(error)
                }
            }
            let n = try result.get()
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return parse(bytes, file: file, layer: layer, maxVertices: maxVertices, reusing: previous)
    }

    /// Builds the layer from an already parsed document.
    public static func parse(
        _ document: JSONDocument, file: String, layer: String, maxVertices: Int = defaultMaxVertices
    ) -> (layer: FenceLayer, errors: [FenceError]) {
        parse(document.value, file: file, layer: layer, maxVertices: maxVertices)
    }

    /// Builds the layer from a FeatureCollection value (for one built in memory, such as a
    /// runtime fence's Feature wrapped in a collection).
    public static func parse(
        _ value: JSONValue, file: String, layer: String, maxVertices: Int = defaultMaxVertices
    ) -> (layer: FenceLayer, errors: [FenceError]) {
        var collector = FeatureCollector(file: file, layer: layer, maxVertices: maxVertices)
        return finish(value, collector: &collector, featuresStreamed: false)
    }

    /// Checks the FeatureCollection around the features and assembles the layer and its errors
    /// (collection errors, then the features' in file order). `featuresStreamed`: the features
    /// already went through `collector` while the text was read (the root's `features` is then
    /// an empty placeholder array); else they are read here from the root.
    static func finish(
        _ value: JSONValue, collector: inout FeatureCollector, featuresStreamed: Bool
    ) -> (layer: FenceLayer, errors: [FenceError]) {
        let file = collector.file
        var result = FenceLayer(name: collector.layer, file: file, fences: [])
        var errors: [FenceError] = []
        func fail(_ message: String) -> (layer: FenceLayer, errors: [FenceError]) {
            errors.append(FenceError(file: file, message: message))
            return (result, errors)
        }
        guard case .object(let root) = value else {
            return fail("expected a GeoJSON FeatureCollection object, found \(value.typeName)")
        }
        switch root["type"] {
        case .string("FeatureCollection"): break
        case .string(let other): return fail("expected a GeoJSON FeatureCollection, found \"type\": \"\(other)\"")
        case nil: return fail("expected a GeoJSON FeatureCollection, but \"type\" is missing")
        case let other?: return fail("expected a GeoJSON FeatureCollection, found \"type\": \(other.serialized())")
        }
        switch root["geotrigger"] {
        case nil: break
        case .object(let defaults)?: result.defaults = defaults
        case let other?:
            errors.append(FenceError(file: file, message: "\"geotrigger\" must be an object of trigger defaults, found \(other.typeName)"))
        }
        guard let featuresValue = root["features"] else { return fail("a FeatureCollection needs a \"features\" array") }
        guard case .array(let features) = featuresValue else {
            return fail("\"features\" must be an array, found \(featuresValue.typeName)")
        }
        if !featuresStreamed {
            for feature in features { collector.add(feature) }
        }
        result = FenceLayer(name: result.name, file: result.file, prepared: collector.prepared, defaults: result.defaults)
        return (result, errors + collector.errors)
    }
}
