import Testing
@testable import GeotriggerCore

@Suite struct TopicFilterTests {
    @Test func deviceIDIsTheWildcardLevelsJoined() throws {
        let fleet = try TopicFilter("fleet/+/+/location")
        #expect(fleet.deviceID(in: "fleet/vehicles/v17/location") == "vehicles/v17")
        #expect(fleet.deviceID(in: "fleet/vehicles/v17/status") == nil)
        #expect(fleet.deviceID(in: "fleet/vehicles/location") == nil)
        #expect(fleet.deviceID(in: "fleet/a/b/location/x") == nil)
        #expect(fleet.deviceID(in: "fleet//v17/location") == "/v17")
        let owntracks = try TopicFilter("owntracks/+/+")
        #expect(owntracks.deviceID(in: "owntracks/alice/phone") == "alice/phone")
        #expect(owntracks.deviceID(in: "owntracks/alice/phone/event") == nil)
        let multi = try TopicFilter("devices/#")
        #expect(multi.deviceID(in: "devices/a/b/c") == "a/b/c")
        #expect(try TopicFilter("#").deviceID(in: "$SYS/broker") == nil)
        #expect(try TopicFilter("+/x").deviceID(in: "$SYS/x") == nil)
    }

    @Test func rejectsMalformedFilters() throws {
        #expect(throws: InputDrop.self) { try TopicFilter("a/#/b") }
        #expect(throws: InputDrop.self) { try TopicFilter("a/b+/c") }
        #expect(throws: InputDrop.self) { try TopicFilter("") }
        #expect(try TopicFilter("a/+").hasWildcard)
        #expect(try !TopicFilter("a/b").hasWildcard)
    }

    @Test func deviceIDRules() {
        #expect(DeviceID.problem(with: "vehicles/v17") == nil)
        #expect(DeviceID.problem(with: "") != nil)
        #expect(DeviceID.problem(with: "/v17") != nil)
        #expect(DeviceID.problem(with: "a//b") != nil)
        #expect(DeviceID.problem(with: "a/") != nil)
        #expect(DeviceID.problem(with: "a+b") != nil)
        #expect(DeviceID.problem(with: "a#") != nil)
        #expect(DeviceID.problem(with: "a\u{7}b") != nil)
        #expect(DeviceID.problem(with: "$SYS") != nil)
        #expect(DeviceID.problem(with: String(repeating: "x", count: 201)) != nil)
    }
}

@Suite struct ISO8601TimeTests {
    @Test func parsesZonesAndFractions() {
        #expect(ISO8601Time.parse("1970-01-01T00:00:00Z") == 0)
        #expect(ISO8601Time.parse("2026-11-30T12:00:00Z") == 1_796_040_000)
        #expect(ISO8601Time.parse("2026-11-30T12:00:00.250Z") == 1_796_040_000.25)
        #expect(ISO8601Time.parse("2026-11-30T14:00:00+02:00") == 1_796_040_000)
        #expect(ISO8601Time.parse("2026-11-30T07:00:00-0500") == 1_796_040_000)
        #expect(ISO8601Time.parse("2024-02-29T00:00:00Z") != nil)
        #expect(ISO8601Time.parse("2023-02-29T00:00:00Z") == nil)
        #expect(ISO8601Time.parse("2026-13-01T00:00:00Z") == nil)
        #expect(ISO8601Time.parse("2026-11-30") == nil)
        #expect(ISO8601Time.parse("2026-11-30T12:00:00Zjunk") == nil)
    }

    @Test func formatsUTCWithMilliseconds() {
        #expect(ISO8601Time.format(1_796_040_000.12) == "2026-11-30T12:00:00.120Z")
        #expect(ISO8601Time.format(0, milliseconds: true) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601Time.format(-0.5) == "1969-12-31T23:59:59.500Z")
        #expect(ISO8601Time.format(1_796_040_000.9996) == "2026-11-30T12:00:01Z")
        #expect(ISO8601Time.format(1_796_040_000) == "2026-11-30T12:00:00Z")
        for t in stride(from: -1e9, to: 4e9, by: 7_777_777.125) {
            #expect(ISO8601Time.parse(ISO8601Time.format(t)) == t)
        }
    }
}

@Suite struct LocationDecoderTests {
    let now = 1_796_040_000.0
    let json = LocationDecoder(format: .json, topicFilter: try! TopicFilter("fleet/+/+/location"), maxPayload: 512)
    let owntracks = LocationDecoder(format: .owntracks, topicFilter: try! TopicFilter("owntracks/+/+"))

    func decodeJSON(_ payload: String, topic: String = "fleet/vehicles/v17/location") -> Result<LocationDecoder.Decoded, InputDrop> {
        json.decode(topic: topic, payload: Array(payload.utf8), now: now)
    }

    func reason(_ r: Result<LocationDecoder.Decoded, InputDrop>) -> DropReason? {
        if case .failure(let drop) = r { return drop.reason }
        return nil
    }

    @Test func decodesJSONWithEveryField() throws {
        let r = decodeJSON(#"{"lat": 34.456, "lon": -119.707, "time": "2026-11-30T11:59:00Z", "accuracy": 5, "speed": 1.4, "heading": 90, "altitude": 12.5, "extra": {"x": [1, "\u00e9"]}}"#)
        let d = try r.get()
        #expect(d.update == LocationUpdate(device: "vehicles/v17", lat: 34.456, lon: -119.707, time: now - 60,
                                           accuracy: 5, speed: 1.4, heading: 90, altitude: 12.5))
    }

    @Test func epochSecondsAndMilliseconds() throws {
        #expect(try decodeJSON(#"{"lat":1,"lon":2,"time":1796039990}"#).get().update.time == now - 10)
        #expect(try decodeJSON(#"{"lat":1,"lon":2,"time":1796039990500}"#).get().update.time == now - 9.5)
    }

    @Test func decodesOwnTracks() throws {
        let payload = #"{"_type":"location","lat":34.4561,"lon":-119.7071,"tst":1796039999,"acc":8,"vel":18,"cog":-1,"alt":30,"tid":"al"}"#
        let d = try owntracks.decode(topic: "owntracks/alice/phone", payload: Array(payload.utf8), now: now).get()
        #expect(d.update.device == "alice/phone")
        #expect(d.update.speed == 5)  // 18 km/h
        #expect(d.update.heading == nil)  // -1 means unknown
        #expect(d.update.accuracy == 8)
        #expect(d.trackerID == "al")
        let transition = #"{"_type":"transition","lat":1,"lon":2,"tst":1796039999}"#
        #expect(reason(owntracks.decode(topic: "owntracks/alice/phone", payload: Array(transition.utf8), now: now)) == .ignoredType)
        let noType = #"{"lat":1,"lon":2,"tst":1796039999}"#
        #expect(reason(owntracks.decode(topic: "owntracks/alice/phone", payload: Array(noType.utf8), now: now)) == .missingField)
    }

    @Test func everyDropReasonOfTheDecoder() {
        #expect(reason(decodeJSON("not json")) == .notJSON)
        #expect(reason(decodeJSON(#"[1, 2]"#)) == .notJSON)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990} x"#)) == .notJSON)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,}"#)) == .notJSON)
        #expect(reason(decodeJSON(#"{"lat":01,"lon":2,"time":1796039990}"#)) == .notJSON)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":"\ud800"}"#)) == .notJSON)
        let badUTF8: [UInt8] = Array(#"{"lat":1,"lon":2,"time":1796039990,"n":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(reason(json.decode(topic: "fleet/a/b/location", payload: badUTF8, now: now)) == .invalidUTF8)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,"pad":"\#(String(repeating: "x", count: 600))"}"#)) == .oversize)
        #expect(reason(decodeJSON(#"{"lon":2,"time":1796039990}"#)) == .missingField)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2}"#)) == .missingField)
        #expect(reason(decodeJSON(#"{"lat":"1","lon":2,"time":1796039990}"#)) == .wrongType)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":true}"#)) == .wrongType)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":"yesterday"}"#)) == .wrongType)
        #expect(reason(decodeJSON(#"{"lat":1e999,"lon":2,"time":1796039990}"#)) == .notFinite)
        #expect(reason(decodeJSON(#"{"lat":91,"lon":2,"time":1796039990}"#)) == .outOfRange)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":-180.5,"time":1796039990}"#)) == .outOfRange)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,"accuracy":-1}"#)) == .outOfRange)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,"heading":400}"#)) == .outOfRange)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796041000}"#)) == .futureTime)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990}"#, topic: "fleet//v17/location")) == .badDeviceId)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1796039990}"#, topic: "other/topic")) == .badDeviceId)
    }

    @Test func nullOptionalFieldsAreAbsent() throws {
        let d = try decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,"accuracy":null,"speed":null}"#).get()
        #expect(d.update.accuracy == nil && d.update.speed == nil)
    }

    @Test func escapedStringsDecode() throws {
        let d = try owntracks.decode(
            topic: "owntracks/a/b", payload: Array(#"{"_type":"loc\u0061tion","lat":1,"lon":2,"tst":1796039990,"tid":"\ud83d\ude00"}"#.utf8), now: now
        ).get()
        #expect(d.trackerID == "😀")
    }

    @Test func owntracksPayloadRoundTripsThroughTheDecoder() throws {
        let update = LocationUpdate(device: "alice/phone", lat: 34.4561, lon: -119.7067, time: 1_796_039_999.7,
                                    accuracy: 7.6, speed: 5, heading: 271.4, altitude: 12.2)
        let bytes = Array(update.owntracksPayload().serialized().utf8)
        let decoded = try owntracks.decode(topic: "owntracks/alice/phone", payload: bytes, now: now).get()
        #expect(decoded.trackerID == "ne")
        #expect(decoded.update == LocationUpdate(device: "alice/phone", lat: 34.4561, lon: -119.7067, time: 1_796_039_999,
                                                 accuracy: 8, speed: 5, heading: 271, altitude: 12))
    }
}
