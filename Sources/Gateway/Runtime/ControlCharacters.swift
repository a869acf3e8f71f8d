/// The characters a terminal acts on instead of showing: C0 controls, DEL, C1 controls (0x9B is
/// a CSI on many terminals) and the Unicode line and paragraph separators. Text from the broker,
/// the journal, fence files or tracks is printed with these escaped, so a fence name cannot
/// retitle the window, move the cursor or clear the screen.
enum ControlCharacters {
    static func contains(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// JSON text with every control character written as a `\uXXXX` escape. Inside a string
    /// that is the same value, so the line still decodes to what was published; the gateway's
    /// serializer already escapes C0, this catches DEL, C1 and the separators it leaves raw.
    static func escapedJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: contains) else { return json }
        var out = ""
        out.reserveCapacity(json.utf8.count + 16)
        for scalar in json.unicodeScalars {
            if contains(scalar) {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
