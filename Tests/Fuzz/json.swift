// The JSON and JSON5 readers. Where the dialects overlap they must agree: any text the strict
// dialect accepts is JSON5 with the same value. Each dialect's `parseValue` (no locations)
// must give what `parse` gives, and every value's recorded location must lie in the text.
import GeotriggerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let strict = try? JSONReader.parse(bytes, file: "fuzz.json", dialect: .json)
    let json5 = try? JSONReader.parse(bytes, file: "fuzz.json5", dialect: .json5)
    if let strict {
        guard let json5 else { fatalError("fuzz property violated: strict JSON accepted, JSON5 refused") }
        fuzzCheck(strict.value == json5.value, "JSON and JSON5 values differ: \(strict.value) vs \(json5.value)")
        checkLocations(strict, strict.value, [])
    }
    if let json5 {
        checkLocations(json5, json5.value, [])
    }
    for (document, dialect) in [(strict, JSONDialect.json), (json5, .json5)] {
        let value = try? JSONReader.parseValue(bytes, file: "fuzz", dialect: dialect)
        switch (document, value) {
        case (nil, nil): break
        case (let d?, let v?):
            // NaN (JSON5) is not equal to itself: compare the serialized forms then.
            fuzzCheck(d.value == v || d.value.serialized() == v.serialized(), "parse and parseValue differ (\(dialect))")
        default: fatalError("fuzz property violated: parse and parseValue disagree on validity (\(dialect))")
        }
    }
    return 0
}

/// Every value (and, below the top, every member) has a location inside the text.
private func checkLocations(_ document: JSONDocument, _ value: JSONValue, _ path: [JSONPathComponent]) {
    guard path.count < 8 else { return }
    if let location = document.valueLocation(of: path) {
        fuzzCheck(location.line >= 1 && location.column >= 1, "bad location \(location) for \(path)")
    } else {
        fatalError("fuzz property violated: no location for \(path)")
    }
    switch value {
    case .array(let a):
        for (i, v) in a.prefix(16).enumerated() { checkLocations(document, v, path + [.index(i)]) }
    case .object(let o):
        for e in o.entries.prefix(16) { checkLocations(document, e.value, path + [.key(e.key)]) }
    default: break
    }
}
