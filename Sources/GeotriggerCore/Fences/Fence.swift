/// One fence: a GeoJSON Feature of a fence layer.
public struct Fence: Sendable, Equatable {
    /// The Feature's `id`, else `properties.id`; numbers become decimal strings.
    public var id: String
    /// The layer (file name without `.geojson`) this fence belongs to.
    public var layer: String
    /// `properties.name`, if it is a string, cut to ``outputLimit`` bytes.
    public var name: String? {
        get { storedName }
        set {
            let properties = self.properties
            storedName = newValue
            self.properties = properties
        }
    }
    /// The Feature's properties as written, those past ``outputLimit`` bytes of JSON left out.
    public var properties: JSONObject {
        get {
            guard propertiesAreName else { return storedProperties }
            return JSONObject(uniqueEntries: [(key: "name", value: .string(storedName ?? ""))])
        }
        set {
            if let storedName, newValue.count == 1, newValue.entries[0].key.utf8.elementsEqual("name".utf8),
                case .string(let value) = newValue.entries[0].value, value.utf8.elementsEqual(storedName.utf8)
            {
                storedProperties = JSONObject()
                propertiesAreName = true
            } else {
                storedProperties = newValue
                propertiesAreName = false
            }
        }
    }
    /// ``name`` as stored.
    private(set) var storedName: String?
    /// ``properties`` as stored: empty when they are exactly `{"name": name}` with the name's
    /// very bytes (``propertiesAreName``), as most fences' are, which saves their entry array
    /// (an 80-byte heap block per fence).
    private(set) var storedProperties: JSONObject
    public var geometry: FenceGeometry
    /// `properties.buffer` in metres, if given (the first choice for the effective buffer).
    public var buffer: Double?
    /// The name or the properties were cut to ``outputLimit``; events say so on their fence
    /// object (`"truncated": true`).
    public var truncated: Bool
    /// The properties are `{"name": name}` and are not stored (see ``storedProperties``).
    private(set) var propertiesAreName: Bool
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
        self.storedName = name
        self.storedProperties = JSONObject()
        self.propertiesAreName = false
        self.truncated = nameCut || propertiesCut
        self.geometry = geometry
        self.buffer = buffer
        self.storedFeatureIndex = Int32(clamping: featureIndex)
        self.properties = properties
    }

    /// `properties[key]`, without building the properties when only the name is stored.
    func property(_ key: String) -> JSONValue? {
        guard propertiesAreName else { return storedProperties[key] }
        return key.utf8.elementsEqual("name".utf8) ? storedName.map { .string($0) } : nil
    }

    /// `feature 3 ("Cactus")` or `feature 3`, as error messages name a fence.
    public var label: String {
        if let name { return "feature \(featureIndex) (\"\(name)\")" }
        return "feature \(featureIndex)"
    }
}
