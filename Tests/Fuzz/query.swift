// The query parser's input side. QueryService (Gateway module) reads a query with
// `JSONReader.parse(_, dialect: .json)` and answers with `serializedBytes()`; the service
// itself needs an MQTT client, the store and the monitor pool, so it is not linked here. This
// target fuzzes what it relies on: the strict reader, error locations, the reply serializer
// (its output must read back as the same value, non-finite numbers as null) and the
// `replyTo` / `correlation` members a reply copies.
import GeotriggerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQuery(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let document: JSONDocument
    do {
        document = try JSONReader.parse(bytes, file: "fleet/query/gw-1", dialect: .json)
    } catch {
        // The service quotes the location in its reply.
        fuzzCheck(error.location.line >= 1 && error.location.column >= 1, "bad error location \(error.location)")
        _ = "not JSON: \(error.location.line):\(error.location.column): \(error.message)"
        return 0
    }
    var reply = document.value
    if case .object(let request) = document.value {
        var answer: JSONObject = ["error": .string("a query asks one thing, found \(request.keys.count)")]
        if let correlation = request["correlation"] { answer["correlation"] = correlation }
        if case .string(let replyTo)? = request["replyTo"] { answer["replyTo"] = .string(replyTo) }
        reply = .object(answer)
    }
    for value in [document.value, reply] {
        let text = value.serializedBytes()
        guard let again = try? JSONReader.parseValue(text, file: "reply", dialect: .json) else {
            fatalError("fuzz property violated: serialized reply is not JSON: \(String(decoding: text, as: UTF8.self))")
        }
        fuzzCheck(again == finiteNumbers(value), "reply does not read back as the same value")
    }
    return 0
}
