/// Member (`value.name`) and index (`value[key]`) access.
///
/// Choices: a missing key of a dictionary (a feature attribute that is not there) is `null`,
/// never an error; so is any member or element of `null`, so `$feedfeature.name` reads `null`
/// when the profile has no feed feature. Reading a member of a number, text, boolean, date or
/// array, or an element out of range, is an error naming the type or the range.
enum ArcadeAccess {
    static func member(
        _ value: ArcadeValue, folded: String, spelled: String, _ location: ArcadeLocation
    ) throws(ArcadeError) -> ArcadeValue {
        switch value {
        case .dictionary(let dictionary): return dictionary[folded: folded] ?? .null
        case .null: return .null
        default: throw location.error("cannot read '\(spelled)' of \(value.typeNameWithArticle)")
        }
    }

    /// `dictionary[text]` (case-insensitive; a non-text key is cast to text), `array[n]` and
    /// `text[n]` (a whole number, negative counts from the end).
    static func index(
        _ value: ArcadeValue, _ key: ArcadeValue, _ frame: inout ArcadeFrame, _ location: ArcadeLocation
    ) throws(ArcadeError) -> ArcadeValue {
        switch value {
        case .dictionary(let dictionary):
            let name = try ArcadeOperators.text(key, &frame, location)
            return dictionary[name] ?? .null
        case .null:
            return .null
        case .array(let elements):
            let i = try position(key, count: elements.count, of: value, location)
            return elements[i]
        case .string(let text):
            let characters = Array(text)
            let i = try position(key, count: characters.count, of: value, location)
            return .string(String(characters[i]))
        default:
            throw location.error("cannot index \(value.typeNameWithArticle)")
        }
    }

    private static func position(
        _ key: ArcadeValue, count: Int, of value: ArcadeValue, _ location: ArcadeLocation
    ) throws(ArcadeError) -> Int {
        guard case .number(let n) = key, n == n.rounded(), abs(n) < 1e15 else {
            throw location.error("an index of \(value.typeNameWithArticle) must be a whole number, found \(key.typeNameWithArticle)")
        }
        let i = n < 0 ? Int(n) + count : Int(n)
        guard i >= 0, i < count else {
            let what = if case .string = value { "characters" } else { "elements" }
            throw location.error("index \(Int(n)) is out of range for \(value.typeNameWithArticle) of \(count) \(what)")
        }
        return i
    }
}
