/// Reads one fence layer file (a GeoJSON FeatureCollection, RFC 7946) into a ``FenceLayer``,
/// collecting every defect of the file rather than stopping at the first.
///
/// The layer returned holds the features that are entirely valid; a caller that needs the whole
/// file (the gateway at start or on SIGHUP) treats any error as fatal for the file.
public enum FenceLayerParser {
    /// At most this many coordinate errors are listed per feature; the rest are counted.
    static let coordinateErrorsShown = 5

    /// Parses the bytes of `file` (a path for messages) as the layer named `layer`.
    public static func parse(_ bytes: [UInt8], file: String, layer: String) -> (layer: FenceLayer, errors: [FenceError]) {
        let document: JSONDocument
        do {
            document = try JSONReader.parse(bytes, file: file, dialect: .json)
        } catch {
            return (
                FenceLayer(name: layer, file: file, fences: []),
                [FenceError(file: file, location: error.location, message: error.message)]
            )
        }
        return parse(document, file: file, layer: layer)
    }

    /// Builds the layer from an already parsed document.
    public static func parse(_ document: JSONDocument, file: String, layer: String) -> (layer: FenceLayer, errors: [FenceError]) {
        var result = FenceLayer(name: layer, file: file, fences: [])
        var errors: [FenceError] = []
        func fail(_ message: String) -> (layer: FenceLayer, errors: [FenceError]) {
            errors.append(FenceError(file: file, message: message))
            return (result, errors)
        }
        guard case .object(let root) = document.value else {
            return fail("expected a GeoJSON FeatureCollection object, found \(document.value.typeName)")
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

        var firstFeatureWithID: [String: (index: Int, name: String?)] = [:]
        for (index, value) in features.enumerated() {
            var reader = FeatureReader(file: file, layer: layer, index: index)
            let fence = reader.read(value)
            if let id = reader.id {
                if let first = firstFeatureWithID[id] {
                    var other = "feature \(first.index)"
                    if let name = first.name { other += " (\"\(name)\")" }
                    reader.error("duplicate fence id \"\(id)\" (\(other) has it too)")
                } else {
                    firstFeatureWithID[id] = (index, reader.name)
                }
            }
            if let fence, reader.errors.isEmpty {
                do {
                    _ = try PreparedFence(fence)
                    result.fences.append(fence)
                } catch {
                    reader.error(error.message)
                }
            }
            errors += reader.errors
        }
        return (result, errors)
    }
}
