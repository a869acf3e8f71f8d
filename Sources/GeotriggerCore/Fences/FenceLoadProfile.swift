/// Where the seconds of reading one fence layer go, for `geotrigger bench load`: the steps the
/// parser takes for a file (``FenceLayerParser/parse(file:layer:maxVertices:reader:)`` with its
/// ``FeatureCollector``) taken one by one with a clock between them. Only the benchmark uses it.
package struct FenceLoadProfile: Sendable {
    /// Seconds finding each feature's text in the stream and parsing it (the geometry
    /// straight into positions, ``FeatureTextParser``; the rest into values) (the whole run
    /// less the steps below).
    package var parse = 0.0
    /// Seconds turning each parsed feature into a ``Fence`` (``FeatureReader``), its
    /// geometry checks included.
    package var read = 0.0
    /// Of ``read``: the ring checks (self-intersection, area), timed again on the valid
    /// polygons' rings after the run (so this is an estimate, with warm caches).
    package var validation = 0.0
    /// Seconds checking ids for duplicates.
    package var ids = 0.0
    /// Seconds preparing the fences (``PreparedFence``: locator, chord pieces, grid).
    package var prepare = 0.0
    /// Seconds of the whole run.
    package var total = 0.0

    /// Reads `bytes` (the text of `file`) as layer `layer` in `chunkSize` pieces as the gateway
    /// reads a file, timing each step with `clock` (seconds). Returns the layer (nil if the
    /// file is not of the plain shape the gateway streams), its error count and the times.
    package static func run(
        _ bytes: [UInt8], file: String, layer: String, maxVertices: Int = FenceLayerParser.defaultMaxVertices,
        clock: () -> Double
    ) -> (layer: FenceLayer?, errors: Int, profile: FenceLoadProfile) {
        var profile = FenceLoadProfile()
        var fences: [Fence] = []
        var prepared: [PreparedFence] = []
        var errors = 0
        var firstFeatureWithID: [String: (index: Int, name: String?)] = [:]
        var count = 0
        var featureBytes = 0
        var scratch: [Coordinate] = []
        var stream = FenceFileStream(reader: { offset, buffer throws(FenceError) in
            let n = Swift.min(buffer.count, bytes.count - offset)
            guard n > 0 else { return 0 }
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + n)])) }
            return n
        })
        let start = clock()
        let root: JSONValue?
        do {
            root = try stream.read { text, whole in
                // The parse as ``FeatureCollector/add(_:whole:)`` does it (counted in `parse`).
                var parsed: (feature: JSONObject, geometry: ParsedGeometry?)?
                var value: JSONValue?
                let length: Int
                if whole {
                    parsed = FeatureTextParser.parse(text, depth: 2, maxVertices: maxVertices, scratch: &scratch)
                    if parsed == nil {
                        value = JSONReader.parseFragment(text, depth: 2)
                        if value == nil { return nil }
                    }
                    length = text.count
                } else {
                    guard let p = FeatureTextParser.parse(prefixOf: text, depth: 2, maxVertices: maxVertices, scratch: &scratch)
                    else { return nil }
                    parsed = (p.feature, p.geometry)
                    length = p.length
                }
                let index = count
                count += 1
                // Sized as the parser sizes a layer from its file size.
                featureBytes += length + 2
                if count == FenceLayerParser.sizingSample {
                    let features = Int(Double(bytes.count) / Double(featureBytes) * Double(count) * 1.05)
                    firstFeatureWithID.reserveCapacity(features)
                    fences.reserveCapacity(features)
                    prepared.reserveCapacity(features)
                }
                var t = clock()
                var reader = FeatureReader(file: file, layer: layer, index: index, maxVertices: maxVertices)
                let fence = if let parsed { reader.read(parsed.feature, geometry: parsed.geometry) } else { reader.read(value!) }
                var now = clock()
                profile.read += now - t
                t = now
                if let id = reader.id, FeatureCollector.claim(id, index: index, name: reader.name, in: &firstFeatureWithID) != nil {
                    reader.error("duplicate fence id")
                }
                now = clock()
                profile.ids += now - t
                t = now
                if let fence, reader.errors.isEmpty {
                    if let p = try? PreparedFence(fence) {
                        prepared.append(p)
                        fences.append(fence)
                    } else {
                        errors += 1
                    }
                    profile.prepare += clock() - t
                }
                errors += reader.errors.count
                return length
            }
        } catch {
            root = nil
        }
        profile.total = clock() - start
        profile.parse = profile.total - profile.read - profile.ids - profile.prepare
        guard root != nil else { return (nil, errors, profile) }

        let t = clock()
        var found = 0
        for fence in fences {
            guard case .polygons(let polygons) = fence.geometry else { continue }
            for polygon in polygons {
                let rings = [polygon.exterior] + polygon.holes
                if RingIntersectionFinder.find(in: rings) != nil { found += 1 }
                for ring in rings where FeatureReader.area(ring) == 0 { found += 1 }
            }
        }
        profile.validation = clock() - t
        precondition(found == 0, "a valid fence failed its checks when timed again")

        let result = FenceLayer(name: layer, file: file, prepared: prepared)
        return (result, errors, profile)
    }
}
