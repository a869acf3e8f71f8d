/// One defect of a fence file, as a person reads it:
/// `fences/garden.geojson: feature 3 ("Cactus"): Point needs a buffer > 0 in trigger "garden"`,
/// or `fences/garden.geojson:12:5: expected ',' or '}' after object member` for invalid JSON.
public struct FenceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file as given to the parser (e.g. `fences/garden.geojson`).
    public var file: String
    /// The line and column, for JSON syntax errors.
    public var location: SourceLocation?
    /// The feature's position in `features` (0-based), if the defect belongs to one.
    public var featureIndex: Int?
    /// The feature's `properties.name`, if it has one.
    public var featureName: String?
    /// What is wrong.
    public var message: String

    public init(
        file: String, location: SourceLocation? = nil, featureIndex: Int? = nil, featureName: String? = nil,
        message: String
    ) {
        self.file = file
        self.location = location
        self.featureIndex = featureIndex
        self.featureName = featureName
        self.message = message
    }

    /// A defect of `fence` (named by its feature index and name).
    public init(file: String, fence: Fence, message: String) {
        self.init(file: file, featureIndex: fence.featureIndex, featureName: fence.name, message: message)
    }

    /// `FILE[:LINE:COLUMN]: [feature N ("NAME"): ]message`.
    public var description: String {
        var text = file
        if let location { text += ":\(location.line):\(location.column)" }
        text += ": "
        if let featureIndex {
            text += "feature \(featureIndex)"
            if let featureName { text += " (\"\(featureName)\")" }
            text += ": "
        }
        return text + message
    }
}
