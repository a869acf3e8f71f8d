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

    /// The topic a filter gives a device id (where a phone's `cmd` goes, docs/phones.md): the
    /// id's levels put back into the wildcards, so that `deviceID(in:)` of it is the id again.
    @Test func topicOfADeviceIsDeviceIDBackwards() throws {
        let owntracks = try TopicFilter("tracks/+/+")
        #expect(owntracks.topic(ofDevice: "alice/phone") == "tracks/alice/phone")
        #expect(owntracks.topic(ofDevice: "alice") == nil)
        #expect(owntracks.topic(ofDevice: "alice/phone/x") == nil)
        #expect(owntracks.topic(ofDevice: "") == nil)
        #expect(try TopicFilter("a/+/b/+").topic(ofDevice: "x/y") == "a/x/b/y")
        #expect(try TopicFilter("+/b/+/d/#").topic(ofDevice: "x/y/z/w") == "x/b/y/d/z/w")
        #expect(try TopicFilter("devices/#").topic(ofDevice: "a/b/c") == "devices/a/b/c")
        for (filter, topic) in [("fleet/+/+/location", "fleet/vehicles/v17/location"), ("owntracks/+/+", "owntracks/alice/phone")] {
            let f = try TopicFilter(filter)
            #expect(f.deviceID(in: topic).flatMap(f.topic(ofDevice:)) == topic)
        }
    }

    @Test func deviceIDEdgeCases() throws {
        #expect(try TopicFilter("a/+/b/+").deviceID(in: "a/x/b/y") == "x/y")  // a literal between wildcards
        #expect(try TopicFilter("+/b/+/d/#").deviceID(in: "x/b/y/d/z/w") == "x/y/z/w")
        #expect(try TopicFilter("+/#").deviceID(in: "a/b/c") == "a/b/c")
        #expect(try TopicFilter("a/#").deviceID(in: "a") == "")  // `#` also matches the parent level
        #expect(try TopicFilter("a/#").deviceID(in: "a/") == "")
        #expect(try TopicFilter("a/+").deviceID(in: "a/") == "")
        #expect(try TopicFilter("+/+").deviceID(in: "/") == "/")
        #expect(try TopicFilter("+").deviceID(in: "") == "")
        #expect(try TopicFilter("#").deviceID(in: "") == "")
        #expect(try TopicFilter("a/+/c").deviceID(in: "a/b") == nil)
        #expect(try TopicFilter("a/b").deviceID(in: "a/b") == "")
        #expect(try TopicFilter("a/+").deviceID(in: "a/$x") == "$x")  // `$` matters only at the start
        #expect(try TopicFilter("$x/+").deviceID(in: "$x/y") == "y")
        #expect(try TopicFilter("é/+/+").deviceID(in: "é/ü/ø") == "ü/ø")
        #expect(try TopicFilter("é/+").deviceID(in: "e\u{301}/x") == nil)  // levels compare by bytes
    }

    /// The obvious reading of the rule, level by level, to check the one-pass matcher against.
    func referenceDeviceID(filter: String, topic: String) -> String? {
        let filterLevels = filter.split(separator: "/", omittingEmptySubsequences: false)
        let topicLevels = topic.split(separator: "/", omittingEmptySubsequences: false)
        var matched: [Substring] = []
        for (n, level) in filterLevels.enumerated() {
            if level == "#" {
                if n == 0, topic.utf8.first == UInt8(ascii: "$") { return nil }
                if n < topicLevels.count { matched.append(Substring(topicLevels[n...].joined(separator: "/"))) }
                return matched.joined(separator: "/")
            }
            guard n < topicLevels.count else { return nil }
            if level == "+" {
                if n == 0, topicLevels[0].utf8.first == UInt8(ascii: "$") { return nil }
                matched.append(topicLevels[n])
            } else if !level.utf8.elementsEqual(topicLevels[n].utf8) {
                return nil
            }
        }
        return filterLevels.count == topicLevels.count ? matched.joined(separator: "/") : nil
    }

    @Test func deviceIDAgreesWithTheLevelByLevelRule() throws {
        // Every filter of up to 3 levels and every topic of up to 4 levels over small alphabets.
        func all(_ parts: [String], upTo levels: Int) -> [String] {
            var result = parts, last = parts
            for _ in 1..<levels {
                last = last.flatMap { prefix in parts.map { prefix + "/" + $0 } }
                result += last
            }
            return result
        }
        var compared = 0
        for filterText in all(["a", "+", "#", "", "$s"], upTo: 3) {
            guard let filter = try? TopicFilter(filterText) else { continue }
            for topic in all(["a", "b", "", "$s", "é"], upTo: 4) {
                #expect(filter.deviceID(in: topic) == referenceDeviceID(filter: filterText, topic: topic), "\(filterText) on \(topic)")
                compared += 1
            }
        }
        #expect(compared > 10_000)
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
        #expect(DeviceID.problem(with: "$\u{301}x") == nil)  // the rule compares Characters: this one is "$́"
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

    /// A fix time too far ahead for an Int of seconds used to trap while the drop message was
    /// written, so one such message stopped the gateway.
    @Test func aFixTimeFarInTheFutureIsDroppedNotATrap() {
        guard case .failure(let drop) = decodeJSON(#"{"lat":1,"lon":2,"time":1e22}"#) else {
            Issue.record("a fix time of 1e22 was accepted")
            return
        }
        #expect(drop.reason == .futureTime)
        #expect(drop.detail == "'time' is 9.99999999820396e+18 s ahead of the gateway clock (input.maxFutureSkew is 300)")
        let tst = owntracks.decode(
            topic: "owntracks/alice/phone", payload: Array(#"{"_type":"location","lat":1,"lon":2,"tst":1e19}"#.utf8), now: now)
        #expect(reason(tst) == .futureTime)
    }

    /// `input.maxAccuracy`: an accuracy circle wider than it is dropped as outOfRange (such a
    /// circle, with an accuracy trigger, would be tested against every fence it covers).
    @Test func accuracyOverMaxAccuracyIsOutOfRange() throws {
        #expect(try decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,"accuracy":10000}"#).get().update.accuracy == 10000)
        guard case .failure(let drop) = decodeJSON(#"{"lat":1,"lon":2,"time":1796039990,"accuracy":1e7}"#) else {
            Issue.record("an accuracy of 1e7 m was accepted")
            return
        }
        #expect(drop == InputDrop(.outOfRange, "'accuracy' is 10000000.0 m, over input.maxAccuracy (10000.0 m)"))
        let strict = LocationDecoder(format: .owntracks, topicFilter: try TopicFilter("owntracks/+/+"), maxAccuracy: 50)
        let tst = strict.decode(
            topic: "owntracks/alice/phone", payload: Array(#"{"_type":"location","lat":1,"lon":2,"tst":1796039990,"acc":51}"#.utf8), now: now)
        #expect(reason(tst) == .outOfRange)
        let ok = strict.decode(
            topic: "owntracks/alice/phone", payload: Array(#"{"_type":"location","lat":1,"lon":2,"tst":1796039990,"acc":50}"#.utf8), now: now)
        #expect(try ok.get().update.accuracy == 50)
    }

    /// Times of 1e300, inf or nan in a payload are drops, never a trap.
    @Test func hugeAndNonFiniteTimesAreDrops() {
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1e300}"#)) == .futureTime)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":-1e300}"#)) == .outOfRange)
        #expect(reason(decodeJSON(#"{"lat":1,"lon":2,"time":1e999}"#)) != nil)
        let tst = owntracks.decode(
            topic: "owntracks/alice/phone", payload: Array(#"{"_type":"location","lat":1,"lon":2,"tst":1e300}"#.utf8), now: now)
        #expect(reason(tst) == .futureTime)
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

    /// A payload the MQTT client did not copy (over `maxPayload`) arrives empty with its size:
    /// still `oversize`, not `notJSON`; a wrong topic still wins.
    @Test func uncopiedPayloadIsOversizeByItsReceivedSize() {
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let drop = json.decode(topic: "fleet/vehicles/v17/location", payload: empty, size: 5_000, now: now)
        #expect(reason(drop) == .oversize)
        if case .failure(let failure) = drop { #expect(failure.detail.contains("5000 bytes")) }
        #expect(reason(json.decode(topic: "elsewhere", payload: empty, size: 5_000, now: now)) == .badDeviceId)
        let small = Array(#"{"lat":1,"lon":2,"time":1796039990}"#.utf8)
        let fits = small.withUnsafeBytes { json.decode(topic: "fleet/vehicles/v17/location", payload: $0, size: small.count, now: now) }
        #expect(reason(fits) == nil)
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

    /// The exact texts of drops (they are logged and counted), pinned from the decoder before
    /// it recognised member names by their bytes and computed numbers itself.
    @Test func dropDetails() {
        let ok = #""lon":2,"time":1796039990"#
        let cases: [(String, DropReason, String)] = [
            ("not json", .notJSON, "the payload is not a JSON object"),
            ("", .notJSON, "the payload is not a JSON object"),
            ("{", .notJSON, "expected a member name at byte 1"),
            ("{}", .missingField, "'lat' is missing"),
            (#"{"lat":1,"lon":2,"time":1796039990} x"#, .notJSON, "unexpected text after the JSON object at byte 36"),
            (#"{"lat":1,"lon":2,"time":1796039990,}"#, .notJSON, "expected a member name at byte 35"),
            (#"{"lat":01,"lon":2,"time":1796039990}"#, .notJSON, "expected ',' or '}' at byte 9"),
            (#"{"lat" 1}"#, .notJSON, "expected ':' at byte 8"),
            (#"{"lat":}"#, .notJSON, "invalid value at byte 7"),
            (#"{"lat":-a}"#, .notJSON, "invalid value at byte 7"),
            (#"{"lat":1.}"#, .notJSON, "invalid number at byte 7"),
            (#"{"lat":1e+}"#, .notJSON, "invalid number at byte 7"),
            (#"{"x":1.e5}"#, .notJSON, "invalid number at byte 5"),
            (#"{"lat":tru}"#, .notJSON, "invalid literal at byte 7"),
            (#"{"x":nul"#, .notJSON, "unexpected end of the payload"),
            (#"{"lat":1"#, .notJSON, "expected ',' or '}' at byte 8"),
            (#"{"lat"#, .notJSON, "unterminated string at byte 1"),
            (#"{"a\x":1}"#, .notJSON, "bad escape at byte 4"),
            (#"{"a\u12G4":1}"#, .notJSON, "bad \\u escape at byte 8"),
            ("{\"a\":\"x\t\"}", .notJSON, "control character in a string at byte 7"),
            (#"{"a":{"b" 2}}"#, .notJSON, "expected ':' at byte 11"),
            (#"{"a":[1,2}"#, .notJSON, "expected ',' at byte 10"),
            (#"{"a":[1,]}"#, .notJSON, "invalid value at byte 8"),
            (#"{"a":"# + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "}", .notJSON, "nesting deeper than 64"),
            (#"{"lat":1,"lon":2,"time":"\ud800"}"#, .notJSON, "lone surrogate in a \\u escape"),
            (#"{"x":"\udc00","lat":1,"# + ok + "}", .notJSON, "lone surrogate in a \\u escape"),  // in a skipped value
            (#"{"\ud800x":1,"lat":1,"# + ok + "}", .notJSON, "lone surrogate in a \\u escape"),  // in a skipped name
            (#"{"x":{"\udfff":1},"lat":1,"# + ok + "}", .notJSON, "lone surrogate in a \\u escape"),
            (#"{"lat":1,"time":1796039990}"#, .missingField, "'lon' is missing"),
            (#"{"lat":1,"lon":2}"#, .missingField, "'time' is missing"),
            (#"{"lat":null,"# + ok + "}", .missingField, "'lat' is missing"),
            (#"{"lat\u0000":1,"# + ok + "}", .missingField, "'lat' is missing"),
            (#"{"lät":1,"# + ok + "}", .missingField, "'lat' is missing"),
            (#"{"lat":"1","# + ok + "}", .wrongType, "'lat' must be a number"),
            (#"{"lat":[],"# + ok + "}", .wrongType, "'lat' must be a number"),
            (#"{"lat":1,"lon":2,"time":null}"#, .wrongType, "'time' must be a string or a number"),
            (#"{"lat":1,"lon":2,"time":"yesterday"}"#, .wrongType,
             "'time' must be ISO-8601 (2026-11-30T12:00:00Z) or epoch seconds, found 'yesterday'"),
            (#"{"lat":1,"# + ok + #","speed":"x"}"#, .wrongType, "'speed' must be a number"),
            (#"{"lat":-1e999,"# + ok + "}", .notFinite, "'lat' is not finite"),
            (#"{"lat":1,"lon":2,"time":1e999}"#, .notFinite, "'time' is not finite"),
            (#"{"lat":1,"# + ok + #","altitude":1e309}"#, .notFinite, "'altitude' is not finite"),
            (#"{"lat":-90.0000001,"# + ok + "}", .outOfRange, "'lat' must be -90 to 90, found -90.0000001"),
            (#"{"lat":1,"lon":-180.5,"time":1796039990}"#, .outOfRange, "'lon' must be -180 to 180, found -180.5"),
            (#"{"lat":1,"# + ok + #","speed":-0.5}"#, .outOfRange, "'speed' must be >= 0, found -0.5"),
            (#"{"lat":1,"# + ok + #","heading":360.0000000000001}"#, .outOfRange, "'heading' must be 0 to 360, found 360.0000000000001"),
            (#"{"lat":1,"lon":2,"time":-0}"#, .outOfRange, "'time' must be after 1970, found -0.0"),
            (#"{"lat":1,"lon":2,"time":"1969-12-31T23:59:59Z"}"#, .outOfRange, "'time' must be after 1970, found -1.0"),
            (#"{"lat":1,"lon":2,"time":1796041000000}"#, .futureTime,
             "'time' is 1000 s ahead of the gateway clock (input.maxFutureSkew is 300)"),
            (#"{"lat":1,"lat":"x","# + ok + "}", .wrongType, "'lat' must be a number"),  // the last duplicate wins
            (#"{"lat":1,"# + ok + #","time":"soon"}"#, .wrongType,
             "'time' must be ISO-8601 (2026-11-30T12:00:00Z) or epoch seconds, found 'soon'"),
        ]
        for (payload, reason, detail) in cases {
            #expect(decodeJSON(payload).drop == InputDrop(reason, detail), "\(payload)")
        }
        let badUTF8: [[UInt8]] = [
            Array(#"{""#.utf8) + [0xC0, 0x80] + Array(#"":1}"#.utf8),  // overlong, in a name
            Array(#"{"x":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),  // an encoded surrogate
            Array(#"{"x":["\ud800 "#.utf8) + [0xC3, 0x28] + Array(#""]}"#.utf8),  // found before the lone surrogate
        ]
        for payload in badUTF8 {
            #expect(json.decode(topic: "fleet/a/b/location", payload: payload, now: now).drop
                    == InputDrop(.invalidUTF8, "the payload is not valid UTF-8"))
        }
        let ownTracksCases: [(String, DropReason, String)] = [
            (#"{"_type":1,"lat":1,"lon":2,"tst":1796039990}"#, .wrongType, "'_type' must be a string"),
            (#"{"_type":"x\u00e9\"y","lat":1,"lon":2,"tst":1796039990}"#, .ignoredType, "_type 'xé\"y' is not a location"),
            (#"{"_type":"location","_type":"lwt","lat":1,"lon":2,"tst":1796039990}"#, .ignoredType, "_type 'lwt' is not a location"),
            (#"{"_type":"location","lat":1,"lon":2}"#, .missingField, "'tst' is missing"),
            (#"{"_type":"location","lat":1,"lon":2,"tst":1796039990,"acc":-1}"#, .outOfRange, "'acc' must be >= 0, found -1.0"),
            (#"{"_type":"location","lat":1,"lon":2,"tst":1796039990,"cog":400}"#, .outOfRange, "'cog' must be 0 to 360, found 400.0"),
            (#"{"_type":"location","lat":1,"lon":2,"tst":1796049990}"#, .futureTime,
             "'tst' is 9990 s ahead of the gateway clock (input.maxFutureSkew is 300)"),
        ]
        for (payload, reason, detail) in ownTracksCases {
            let result = owntracks.decode(topic: "owntracks/alice/phone", payload: Array(payload.utf8), now: now)
            #expect(result.drop == InputDrop(reason, detail), "\(payload)")
        }
    }

    @Test func escapedAndRepeatedMemberNames() throws {
        let d = try decodeJSON(#"{"l\u0061t":-0,"lon":2,"lon":3,"time":1796039990,"LAT":99,"accuracyy":-1,"x":{"lat":"no"}}"#).get()
        #expect(d.update.lat.sign == .minus && d.update.lat == 0)
        #expect(d.update.lon == 3)
        #expect(d.update.accuracy == nil)
        let t = try owntracks.decode(
            topic: "owntracks/a/b", payload: Array(#"{"_type":"lwt","_t\u0079pe":"location","lat":1,"lon":2,"tst":1796039990,"tid":5}"#.utf8),
            now: now
        ).get()
        #expect(t.trackerID == nil)
    }

    /// Each format recognises exactly its member names, by their bytes.
    @Test func memberNames() {
        func json(_ name: String) -> LocationDecoder.JSONFields.Member? {
            Array(name.utf8).withUnsafeBufferPointer { LocationDecoder.JSONFields.member(named: $0) }
        }
        func owntracks(_ name: String) -> LocationDecoder.OwnTracksFields.Member? {
            Array(name.utf8).withUnsafeBufferPointer { LocationDecoder.OwnTracksFields.member(named: $0) }
        }
        #expect(json("lat") == .lat && json("lon") == .lon && json("time") == .time && json("accuracy") == .accuracy)
        #expect(json("speed") == .speed && json("heading") == .heading && json("altitude") == .altitude)
        #expect(owntracks("_type") == .type && owntracks("lat") == .lat && owntracks("lon") == .lon && owntracks("tst") == .tst)
        #expect(owntracks("acc") == .acc && owntracks("alt") == .alt && owntracks("vel") == .vel && owntracks("cog") == .cog)
        #expect(owntracks("tid") == .tid)
        for other in ["", "la", "latt", "Lat", "lat\u{0}", "\u{0}lat", "tst", "acc", "_type", "accuracyy", "altitudes", "headin"] {
            #expect(json(other) == nil, "\(other)")
        }
        for other in ["", "time", "accuracy", "_typ", "_types", "ti", "tidd", "at", "cogs"] {
            #expect(owntracks(other) == nil, "\(other)")
        }
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

extension Result where Failure == InputDrop {
    /// The drop, if it is one.
    var drop: InputDrop? {
        if case .failure(let drop) = self { return drop }
        return nil
    }
}
