/// A fence layer: one GeoJSON FeatureCollection file `NAME.geojson`.
public struct FenceLayer: Sendable, Equatable {
    /// The layer name: the file name without `.geojson`.
    public var name: String
    /// The file it was read from, as given (for messages); empty for layers built in code.
    public var file: String
    public var fences: [Fence]
    /// The layer's trigger defaults: the foreign member `"geotrigger": { ... }`, if present.
    public var defaults: JSONObject?

    public init(name: String, file: String = "", fences: [Fence], defaults: JSONObject? = nil) {
        self.name = name
        self.file = file
        self.fences = fences
        self.defaults = defaults
    }
}
