/// One fence: a GeoJSON Feature of a fence layer.
public struct Fence: Sendable, Equatable {
    /// The Feature's `id`, else `properties.id`; numbers become decimal strings.
    public var id: String
    /// The layer (file name without `.geojson`) this fence belongs to.
    public var layer: String
    /// `properties.name`, if it is a string, cut to ``outputLimit`` bytes.
    public var name: String?
    /// The Feature's properties as written, those past ``outputLimit`` bytes of JSON left out.
    public var properties: JSONObject
    public var geometry: FenceGeometry
    /// `properties.buffer` in metres, if given (the first choice for the effective buffer).
    public var buffer: Double?
    /// The name or the properties were cut to ``outputLimit``; events say so on their fence
    /// object (`"truncated": true`).
    public var truncated: Bool
    /// The Feature's position in its file's `features` array (0-based), for messages.
    public var featureIndex: Int {
        get { Int(storedFeatureIndex) }
        set { storedFeatureIndex = Int32(clamping: newValue) }
    }
    /// ``featureIndex`` in 32 bits (a file of 2^31 features would be far beyond memory): with
    /// it after `truncated`, the struct is 80 bytes rather than 88, in every prepared fence.
    private var storedFeatureIndex: Int32

    public init(
        id: String, layer: String, name: String? = nil, properties: JSONObject = JSONObject(),
        geometry: FenceGeometry, buffer: Double? = nil, featureIndex: Int = 0
    ) {
        self.id = id
        self.layer = layer
        let (name, nameCut) = Fence.cut(name: name)
        let (properties, propertiesCut) = Fence.cut(properties: properties)
        self.name = name
        self.properties = properties
        self.truncated = nameCut || propertiesCut
        self.geometry = geometry
        self.buffer = buffer
        self.storedFeatureIndex = Int32(clamping: featureIndex)
    }

    /// `feature 3 ("Cactus")` or `feature 3`, as error messages name a fence.
    public var label: String {
        if let name { return "feature \(featureIndex) (\"\(name)\")" }
        return "feature \(featureIndex)"
    }
}
