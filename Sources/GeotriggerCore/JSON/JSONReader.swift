/// Reads JSON (RFC 8259) and JSON5 text into a ``JSONDocument`` that remembers where every value
/// was written, so that config and fence errors can name a line and a column.
///
/// Both dialects refuse duplicate object keys, invalid UTF-8, lone surrogates and nesting deeper
/// than ``maximumDepth``; the first problem found is thrown as a ``JSONSyntaxError``.
public enum JSONReader {
    /// The deepest nesting of arrays and objects accepted.
    public static let maximumDepth = 512

    /// Parses `bytes` (UTF-8) as `dialect`; `file` names the text in error messages.
    public static func parse(_ bytes: [UInt8], file: String, dialect: JSONDialect) throws(JSONSyntaxError) -> JSONDocument {
        let result: Result<JSONDocument, JSONSyntaxError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer, file: file, json5: dialect == .json5)
            do throws(JSONSyntaxError) {
                let value = try parser.parseDocument()
                return .success(
                    JSONDocument(value: value, file: file, text: bytes, nodes: parser.nodes, children: parser.children))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses `bytes` (UTF-8) as `dialect` into its value alone, keeping no locations (cheaper
    /// than `parse`, whose document can locate every value, when no message needs that; syntax
    /// errors still carry theirs).
    ///
    /// `streaming`: a member of the top-level object whose array value is read one element at
    /// a time: each element goes to `element` as soon as it is read and is not kept, and the
    /// member's value in the result is an empty array (so a large array never exists whole).
    /// A value of another type is kept as usual. Elements are handed over before the whole text
    /// is checked: if this throws, ignore what `element` received.
    public static func parseValue(
        _ bytes: [UInt8], file: String, dialect: JSONDialect,
        streaming member: String? = nil, element: ((JSONValue) -> Void)? = nil
    ) throws(JSONSyntaxError) -> JSONValue {
        let result: Result<JSONValue, JSONSyntaxError> = bytes.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer, file: file, json5: dialect == .json5, recordsNodes: false)
            parser.streamedMember = member
            parser.streamedElement = element
            do throws(JSONSyntaxError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses one JSON (RFC 8259) value that fills `bytes` exactly, cut out of a larger text
    /// where it sits `depth` arrays or objects deep (so the nesting limit is the text's); nil if
    /// it is not valid there. For readers that find the extent of a value themselves and, on
    /// nil, parse the whole text for the located message.
    static func parseFragment(_ bytes: UnsafeBufferPointer<UInt8>, depth: Int) -> JSONValue? {
        // A byte order mark is allowed only at the start of the whole text.
        guard let first = bytes.first, first != 0xEF else { return nil }
        var parser = JSONParser(bytes: bytes, file: "", json5: false, recordsNodes: false)
        parser.depth = depth
        return try? parser.parseDocument()
    }

    /// Parses the bytes of any collection (copied once into an array).
    public static func parse(_ bytes: some Collection<UInt8>, file: String, dialect: JSONDialect) throws(JSONSyntaxError) -> JSONDocument {
        try parse(Array(bytes), file: file, dialect: dialect)
    }

    /// Parses the UTF-8 of `text`.
    public static func parse(_ text: String, file: String, dialect: JSONDialect) throws(JSONSyntaxError) -> JSONDocument {
        try parse(Array(text.utf8), file: file, dialect: dialect)
    }
}
