// Feed payload decoding (`LocationDecoder.decode`) for the `json` and `owntracks` formats, and
// for `owntracks` a phone's transition (`PhoneTransition.decode`), on the bytes as the MQTT
// callback hands them over (no copy). The first byte picks the format
// (bit 0) and, with bit 1 set, takes the topic from the input up to its first newline.
import GeotriggerCore

private let jsonDecoder = LocationDecoder(format: .json, topicFilter: try! TopicFilter("fleet/+/+/location"))
private let ownTracksDecoder = LocationDecoder(format: .owntracks, topicFilter: try! TopicFilter("owntracks/+/+"))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let decoder = selector & 1 == 0 ? jsonDecoder : ownTracksDecoder
    var topic = selector & 1 == 0 ? "fleet/acme/truck-7/location" : "owntracks/alice/phone"
    var start = 1
    if selector & 2 != 0 {
        var end = 1
        while end < size, data[end] != UInt8(ascii: "\n") { end += 1 }
        topic = String(decoding: UnsafeBufferPointer(start: data + 1, count: end - 1), as: UTF8.self)
        start = min(end + 1, size)
    }
    let payload = UnsafeRawBufferPointer(start: data + start, count: size - start)
    // An OwnTracks phone's transition (docs/phones.md), read from the same hostile bytes.
    if selector & 1 == 1, case .success(let t) = PhoneTransition.decode(Array(payload.bindMemory(to: UInt8.self))) {
        fuzzCheck(t.time.isFinite && t.time >= 0, "transition time out of range: \(t)")
        fuzzCheck((t.rid?.utf8.count ?? 0) <= 1024 && (t.desc?.utf8.count ?? 0) <= PhoneRegion.maximumDescriptionBytes, "unbounded text: \(t)")
        fuzzCheck(t.wtst.map(\.isFinite) ?? true, "wtst not finite: \(t)")
    }
    guard case .success(let decoded) = decoder.decode(topic: topic, payload: payload, now: fuzzNow) else { return 0 }

    // The decoder's contract (docs/topics-and-payloads.md "Inputs"): what it accepts is in range.
    let u = decoded.update
    fuzzCheck((-90...90).contains(u.lat) && (-180...180).contains(u.lon), "position out of range: \(u)")
    fuzzCheck(u.time > 0 && u.time <= fuzzNow + decoder.maxFutureSkew, "time out of range: \(u)")
    fuzzCheck(u.accuracy.map { $0 >= 0 && $0.isFinite } ?? true, "bad accuracy: \(u)")
    fuzzCheck(u.speed.map { $0 >= 0 && $0.isFinite } ?? true, "bad speed: \(u)")
    fuzzCheck(u.heading.map { (0...360).contains($0) } ?? true, "bad heading: \(u)")
    fuzzCheck(!u.device.isEmpty, "empty device id")

    // The payload scanner validates the whole text: what it accepts is JSON (duplicate keys
    // aside: in a payload the last one wins, LocationDecoderTests), and the numbers it read on
    // its fast path are the ones the general reader reads.
    let bytes = Array(payload.bindMemory(to: UInt8.self))
    let value: JSONValue
    do {
        value = try JSONReader.parseValue(bytes, file: "payload", dialect: .json)
    } catch {
        if error.message.hasPrefix("duplicate key") { return 0 }
        fatalError("fuzz property violated: the decoder accepted a payload JSONReader refuses: \(error)")
    }
    guard case .object(let object) = value else { fatalError("fuzz property violated: accepted a non-object payload") }
    fuzzCheck(object["lat"] == .number(u.lat), "lat \(u.lat) differs from JSONReader's \(String(describing: object["lat"]))")
    fuzzCheck(object["lon"] == .number(u.lon), "lon \(u.lon) differs from JSONReader's \(String(describing: object["lon"]))")
    return 0
}
