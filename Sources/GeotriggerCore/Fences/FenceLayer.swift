/// A fence layer: one GeoJSON FeatureCollection file `NAME.geojson`.
public struct FenceLayer: Sendable, Equatable {
    /// The layer name: the file name without `.geojson`.
    public var name: String
    /// The file it was read from, as given (for messages); empty for layers built in code.
    public var file: String
    /// The fences, in file order.
    ///
    /// A layer the parser made holds each fence once, inside its prepared form (``prepared``):
    /// reading this property then builds the array from them, so a loop over a large layer
    /// should read ``fenceCount`` and ``fence(at:)`` instead. Setting it stores the array given.
    public var fences: [Fence] {
        get { own ?? prepared.map(\.fence) }
        set { own = newValue }
    }
    /// The fences when they are not (or no longer) those of ``prepared``; nil while they are.
    private(set) var own: [Fence]?
    /// The layer's trigger defaults: the foreign member `"geotrigger": { ... }`, if present.
    public var defaults: JSONObject?
    /// The fences as the parser prepared them while checking them, in the order of ``fences``
    /// (empty for layers built in code). A cache: ``EngineSnapshot`` takes `prepared[i]` only
    /// while `prepared[i].fence == fences[i]`, so changing ``fences`` never uses a stale one.
    public private(set) var prepared: [PreparedFence]

    public init(name: String, file: String = "", fences: [Fence], defaults: JSONObject? = nil) {
        self.name = name
        self.file = file
        self.own = fences
        self.defaults = defaults
        self.prepared = []
    }

    /// A layer of fences already prepared (as the parser makes them): each fence is held once,
    /// in its prepared form.
    public init(name: String, file: String = "", prepared: [PreparedFence], defaults: JSONObject? = nil) {
        self.name = name
        self.file = file
        self.own = nil
        self.defaults = defaults
        self.prepared = prepared
    }

    /// The number of fences (without building ``fences``).
    public var fenceCount: Int { own?.count ?? prepared.count }

    /// Fence `i` (without building ``fences``).
    public func fence(at i: Int) -> Fence { own?[i] ?? prepared[i].fence }

    /// The prepared form of fence `i` if the parser's is still that fence, else nil.
    func preparedFence(at i: Int) -> PreparedFence? {
        guard i < prepared.count else { return nil }
        guard let own else { return prepared[i] }
        guard i < own.count else { return nil }
        let candidate = prepared[i]
        return candidate.fence == own[i] ? candidate : nil
    }

    /// Layers are equal when their name, file, fences and defaults are (``prepared`` is derived).
    public static func == (lhs: FenceLayer, rhs: FenceLayer) -> Bool {
        guard lhs.name == rhs.name, lhs.file == rhs.file, lhs.defaults == rhs.defaults, lhs.fenceCount == rhs.fenceCount
        else { return false }
        return (0..<lhs.fenceCount).allSatisfy { lhs.fence(at: $0) == rhs.fence(at: $0) }
    }
}
