/// A fence layer: one GeoJSON FeatureCollection file `NAME.geojson`.
public struct FenceLayer: Sendable, Equatable {
    /// The layer name: the file name without `.geojson`.
    public var name: String
    /// The file it was read from, as given (for messages); empty for layers built in code.
    public var file: String
    public var fences: [Fence]
    /// The layer's trigger defaults: the foreign member `"geotrigger": { ... }`, if present.
    public var defaults: JSONObject?
    /// The fences as the parser prepared them while checking them, in the order of ``fences``
    /// (empty for layers built in code). A cache: ``EngineSnapshot`` takes `prepared[i]` only
    /// while `prepared[i].fence == fences[i]`, so changing ``fences`` never uses a stale one.
    public internal(set) var prepared: [PreparedFence]

    public init(name: String, file: String = "", fences: [Fence], defaults: JSONObject? = nil) {
        self.name = name
        self.file = file
        self.fences = fences
        self.defaults = defaults
        self.prepared = []
    }

    /// The prepared form of fence `i` if the parser's is still that fence, else nil.
    func preparedFence(at i: Int) -> PreparedFence? {
        guard i < prepared.count, i < fences.count else { return nil }
        let candidate = prepared[i]
        return candidate.fence == fences[i] ? candidate : nil
    }

    /// Layers are equal when their name, file, fences and defaults are (``prepared`` is derived).
    public static func == (lhs: FenceLayer, rhs: FenceLayer) -> Bool {
        lhs.name == rhs.name && lhs.file == rhs.file && lhs.fences == rhs.fences && lhs.defaults == rhs.defaults
    }
}
