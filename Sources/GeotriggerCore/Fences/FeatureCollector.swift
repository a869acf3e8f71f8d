/// The features of one layer as they are read, in order: the valid fences (prepared once, to
/// check them and for the engine to reuse), every defect, and the ids seen (duplicates are defects).
struct FeatureCollector {
    let file: String
    let layer: String
    /// `fences.maxVertices` (see ``FeatureReader/maxVertices``).
    let maxVertices: Int
    private(set) var fences: [Fence] = []
    private(set) var prepared: [PreparedFence] = []
    private(set) var errors: [FenceError] = []
    private var count = 0
    private var firstFeatureWithID: [String: (index: Int, name: String?)] = [:]

    init(file: String, layer: String, maxVertices: Int = FenceLayerParser.defaultMaxVertices) {
        self.file = file
        self.layer = layer
        self.maxVertices = maxVertices
    }

    /// Reads the next element of `features`.
    mutating func add(_ value: JSONValue) {
        let index = count
        count += 1
        var reader = FeatureReader(file: file, layer: layer, index: index, maxVertices: maxVertices)
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
                prepared.append(try PreparedFence(fence))
                fences.append(fence)
            } catch {
                reader.error(error.message)
            }
        }
        errors += reader.errors
    }
}
