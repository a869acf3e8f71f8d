/// The features of one layer as they are read, in order: the valid fences (prepared once, to
/// check them and for the engine to reuse), every defect, and the ids seen (duplicates are defects).
struct FeatureCollector {
    let file: String
    let layer: String
    /// `fences.maxVertices` (see ``FeatureReader/maxVertices``).
    let maxVertices: Int
    /// The live snapshot of a reload: a fence it has unchanged (same layer and id, and equal)
    /// is taken prepared from it, and the one just read is dropped at once.
    let previous: EngineSnapshot?
    /// The valid fences, prepared (each holds its ``Fence``: no second array of them).
    private(set) var prepared: [PreparedFence] = []
    private(set) var errors: [FenceError] = []
    /// Features read so far.
    private(set) var count = 0
    /// Where ``FeatureTextParser`` collects positions (reused from feature to feature).
    private var scratch: [Coordinate] = []
    private var firstFeatureWithID: [String: (index: Int, name: String?)] = [:]

    init(file: String, layer: String, maxVertices: Int = FenceLayerParser.defaultMaxVertices, reusing previous: EngineSnapshot? = nil) {
        self.file = file
        self.layer = layer
        self.maxVertices = maxVertices
        self.previous = previous
    }

    /// Makes room for about `features` features in all (an estimate).
    mutating func reserveCapacity(_ features: Int) {
        firstFeatureWithID.reserveCapacity(features)
        prepared.reserveCapacity(features)
    }

    /// Records feature `index` (named `name`) as the first with `id`, unless one came before:
    /// then returns that one. One hash of `id` either way (the lookup inserts in place).
    static func claim(
        _ id: String, index: Int, name: String?, in firstFeatureWithID: inout [String: (index: Int, name: String?)]
    ) -> (index: Int, name: String?)? {
        var earlier: (index: Int, name: String?)?
        func take(_ entry: inout (index: Int, name: String?)) {
            if entry.index < 0 { entry = (index, name) } else { earlier = entry }
        }
        take(&firstFeatureWithID[id, default: (-1, nil)])
        return earlier
    }

    /// Reads the next element of `features` as ``FenceFileStream/Element`` says (`whole`
    /// false: only the plain case, in place; true: any, from its exact text).
    mutating func add(_ bytes: UnsafeBufferPointer<UInt8>, whole: Bool) -> Int? {
        if whole { return add(text: bytes) ? bytes.count : nil }
        guard let (feature, geometry, length) = FeatureTextParser.parse(
            prefixOf: bytes, depth: 2, maxVertices: maxVertices, scratch: &scratch)
        else { return nil }
        add { $0.read(feature, geometry: geometry) }
        return length
    }

    /// Reads the next element of `features` from its text (exactly one value, 2 containers
    /// deep in the file): the plain case straight from the text (``FeatureTextParser``), any
    /// other through its value. False if the text is not valid JSON (nothing is added).
    mutating func add(text: UnsafeBufferPointer<UInt8>) -> Bool {
        if let (feature, geometry) = FeatureTextParser.parse(text, depth: 2, maxVertices: maxVertices, scratch: &scratch) {
            add { $0.read(feature, geometry: geometry) }
            return true
        }
        guard let value = JSONReader.parseFragment(text, depth: 2) else { return false }
        add(value)
        return true
    }

    /// Reads the next element of `features`.
    mutating func add(_ value: JSONValue) {
        add { $0.read(value) }
    }

    /// Adds the next feature, which `read` reads into a fence (or not) with the reader given.
    private mutating func add(_ read: (inout FeatureReader) -> Fence?) {
        let index = count
        count += 1
        var reader = FeatureReader(file: file, layer: layer, index: index, maxVertices: maxVertices)
        let fence = read(&reader)
        if let id = reader.id, let first = Self.claim(id, index: index, name: reader.name, in: &firstFeatureWithID) {
            var other = "feature \(first.index)"
            if let name = first.name { other += " (\"\(name)\")" }
            reader.error("duplicate fence id \"\(id)\" (\(other) has it too)")
        }
        if let fence, reader.errors.isEmpty {
            if let previous, let old = previous.fence(layer: layer, id: fence.id), old.fence == fence {
                prepared.append(old)
            } else {
                do {
                    prepared.append(try PreparedFence(fence))
                } catch {
                    reader.error(error.message)
                }
            }
        }
        errors += reader.errors
    }
}
