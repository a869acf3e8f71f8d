// The query parser: `QueryRequest.parse`, which the gateway's QueryService calls on every
// payload of PREFIX/query/GATEWAY_ID, and `QueryRequest.replyTopic`, which decides where its
// reply may go. Properties: a parse never traps; an accepted query is one of the seven kinds
// with the bounds the contract gives; a payload the strict reader accepts as an object keeps its
// `correlation`; a reply goes only under the replies prefix or to the fallback topic; the reply
// (answer or error, with the correlation) reads back as the same value.
import GeotriggerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQuery(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let request = QueryRequest.parse(bytes, file: "fleet/query/gw-1")
    let document = try? JSONReader.parse(bytes, file: "fleet/query/gw-1", dialect: .json)
    var reply: JSONObject
    switch request.kind {
    case .success(let kind):
        guard case .object(let object)? = document?.value else { fatalError("fuzz property violated: a query accepted that is not a JSON object") }
        fuzzCheck(request.correlation == object["correlation"], "correlation not kept")
        switch kind {
        case .near(let point, let radius, let limit):
            fuzzCheck((-90...90).contains(point.lat) && (-180...180).contains(point.lon), "near point out of range: \(point)")
            fuzzCheck(radius > 0 && radius <= QueryRequest.maxNearRadius, "near radius out of range: \(radius)")
            fuzzCheck((1...QueryRequest.maxNearLimit).contains(limit), "near limit out of range: \(limit)")
        case .fences(_, let offset, let limit):
            fuzzCheck((0...FeaturesQuery.maxOffset).contains(offset), "fences offset out of range: \(offset)")
            fuzzCheck((1...QueryRequest.maxFencesLimit).contains(limit), "fences limit out of range: \(limit)")
        case .device(let id), .expectations(let id):
            fuzzCheck(!id.isEmpty, "empty device id accepted")
        case .trips(let device):
            fuzzCheck(device.map { !$0.isEmpty } ?? true, "empty device id accepted for trips")
        case .features(let features):
            fuzzCheck((1...FeaturesQuery.maxLimit).contains(features.limit), "features limit out of range: \(features.limit)")
            if let partBytes = features.partBytes {
                fuzzCheck(FeaturesQuery.partBytesRange.contains(partBytes), "features partBytes out of range: \(partBytes)")
            }
            if let box = features.bbox {
                fuzzCheck(
                    (-180...180).contains(box.west) && (-180...180).contains(box.east) && (-90...90).contains(box.south)
                        && (-90...90).contains(box.north) && box.south <= box.north, "features bbox out of range: \(box)")
                let bounds = box.bounds
                fuzzCheck(bounds.minLon <= bounds.maxLon && bounds.maxLon - bounds.minLon <= 360, "features bbox bounds: \(bounds)")
            }
            if case .object(let members)? = object["features"] {
                fuzzCheck(members.keys.allSatisfy { ["bbox", "layers", "limit", "offset", "partBytes"].contains($0) }, "features: an unknown key accepted")
            } else {
                fuzzCheck(false, "features accepted without an object")
            }
        case .track(let device, _, let offset, let limit):
            fuzzCheck(!device.isEmpty, "empty track device id accepted")
            fuzzCheck((0...FeaturesQuery.maxOffset).contains(offset), "track offset out of range: \(offset)")
            fuzzCheck((1...QueryRequest.maxTrackLimit).contains(limit), "track limit out of range: \(limit)")
        case .tracks(let devices, _, let partBytes):
            fuzzCheck((1...QueryRequest.maxTrackDevices).contains(devices.count), "track devices count out of range: \(devices.count)")
            fuzzCheck(devices.allSatisfy { !$0.isEmpty }, "empty track device id accepted in devices")
            if let partBytes {
                fuzzCheck(FeaturesQuery.partBytesRange.contains(partBytes), "track partBytes out of range: \(partBytes)")
            }
        case .events(let query):
            fuzzCheck((0...EventsQuery.maxOffset).contains(query.offset), "events offset out of range: \(query.offset)")
            fuzzCheck((1...EventsQuery.maxLimit).contains(query.limit), "events limit out of range: \(query.limit)")
            fuzzCheck((query.types?.count ?? 0) <= EventsQuery.maxListLength && (query.devices?.count ?? 0) <= EventsQuery.maxListLength,
                      "events list longer than \(EventsQuery.maxListLength)")
        case .inside:
            break
        }
        reply = ["answer": .string("\(kind)")]
    case .failure(let problem):
        fuzzCheck(!problem.message.isEmpty, "an empty error message")
        reply = ["error": .string(problem.message)]
    }
    if let correlation = request.correlation { reply["correlation"] = correlation }

    let prefix = "fleet/replies/", fallback = "fleet/query/gw-1/reply"
    let (topic, refusal) = QueryRequest.replyTopic(asked: request.replyTo, repliesPrefix: prefix, fallback: fallback)
    if topic != fallback {
        fuzzCheck(topic.hasPrefix(prefix) && topic.utf8.count > prefix.utf8.count && !topic.contains("+") && !topic.contains("#"),
                  "a reply would go to \(topic)")
    }
    fuzzCheck((refusal != nil) == (request.replyTo != nil && topic == fallback), "refusal and topic disagree for \(request.replyTo ?? "nil")")

    let text = JSONValue.object(reply).serializedBytes()
    guard let again = try? JSONReader.parseValue(text, file: "reply", dialect: .json) else {
        fatalError("fuzz property violated: serialized reply is not JSON: \(String(decoding: text, as: UTF8.self))")
    }
    fuzzCheck(again == finiteNumbers(.object(reply)), "reply does not read back as the same value")
    return 0
}
