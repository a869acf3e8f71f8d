import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/control-plane.md "Queries": `{"features": {"bbox", "layers", "limit"}}` on a real
    /// broker and `geotrigger serve` with the repository's fence files (garden-sections,
    /// garden-poi; fleet, which no trigger watches) and a runtime layer.
    @Suite struct FeaturesQuery {
        /// A gateway over the repository's fences (and `extraFences` files beside them), its
        /// dispatcher probe, and a query helper that waits for the reply.
        final class Rig: @unchecked Sendable {
            let h: ServeHarness
            let probe: MQTTProbe
            let gateway: GatewayProcess
            private var counter = 0

            /// `extraTriggers`: more entries of the config's `triggers` array (each ending with a comma).
            init(_ name: String, extraFences: [String: String] = [:], extraTriggers: String = "") async throws {
                // The shipped broker's payload limit (deploy/mosquitto): a reply over it would be dropped.
                h = try ServeHarness(name, broker: .init(extraLines: ["message_size_limit 1048576"]))
                let fences = try h.copyFences()
                for (file, text) in extraFences { try text.write(toFile: "\(fences)/\(file)", atomically: true, encoding: .utf8) }
                let config = try h.write(
                    "gw.json5",
                    h.config(
                        fences: fences,
                        extra: """
                            triggers: [
                              { name: "sections", fences: ["garden-sections"] },
                              { name: "poi", fences: ["garden-poi"] },
                              { name: "poi-wide", fences: ["garden-poi"], buffer: 40 },
                              { name: "jobs", fences: ["jobs"] },
                              \(extraTriggers)
                            ]
                            """))
                probe = try await h.probe("dispatch", subscribe: [h.statusTopic, "\(h.prefix)/replies/#", "\(h.prefix)/query/#"])
                gateway = try h.startGateway(config: config)
                #expect(await probe.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")
            }

            /// Sends `query` with a `replyTo` (a topic of its own) and `correlation`; returns the `replyTo`.
            private func ask(_ query: String, correlation: String) throws -> String {
                counter += 1
                let replyTo = "\(h.prefix)/replies/map/\(counter)"
                let body = query.dropLast()  // the query object, without its `}`
                try probe.client.publish(
                    topic: "\(h.prefix)/query/\(h.gatewayID)", payload: #"\#(body),"replyTo":"\#(replyTo)","correlation":"\#(correlation)"}"#,
                    qos: .atLeastOnce)
                return replyTo
            }

            /// Sends `query` with a `replyTo` and `correlation` and returns the reply's bytes.
            func replyBytes(_ query: String, correlation: String = "1") async throws -> [UInt8] {
                let replyTo = try ask(query, correlation: correlation)
                var reply: MQTTMessage?
                _ = await poll(timeout: .seconds(30)) {
                    reply = probe.received(on: replyTo).first
                    return reply != nil
                }
                return try #require(reply, "no reply to \(query.prefix(300))\n\(tail(gateway.log))").payload
            }

            /// Sends a query with `partBytes` and returns the messages of its reply as they came,
            /// once as many came as the first says (`parts`), and half a second more for any extra.
            func partReplies(_ query: String, correlation: String = "1") async throws -> [MQTTMessage] {
                let replyTo = try ask(query, correlation: correlation)
                let whole = await poll(timeout: .seconds(30)) {
                    let messages = probe.received(on: replyTo)
                    guard let first = messages.first,
                        let parts = (try? JSONReader.parse(first.payload, file: "part", dialect: .json))?.value.objectValue?["parts"]?.numberValue
                    else { return false }
                    return messages.count >= Int(parts)
                }
                #expect(whole, "not every part of the reply to \(query.prefix(300)) came: \(probe.received(on: replyTo).count)\n\(tail(gateway.log))")
                try await Task.sleep(for: .milliseconds(500))
                return probe.received(on: replyTo)
            }

            func reply(_ query: String) async throws -> JSONObject {
                let bytes = try await replyBytes(query)
                return try #require(try JSONReader.parse(bytes, file: "reply", dialect: .json).value.objectValue)
            }

            func close() { h.close() }
        }

        /// `LAYER/ID` of every feature of a reply, in order.
        static func ids(_ reply: JSONObject) -> [String] {
            (reply["features"]?.arrayValue ?? []).map { feature in
                let properties = feature.objectValue?["properties"]?.objectValue
                return "\(properties?["layer"]?.stringValue ?? "?")/\(properties?["fence"]?.stringValue ?? "?")"
            }
        }

        static func feature(_ reply: JSONObject, _ id: String) -> JSONObject? {
            reply["features"]?.arrayValue?.first { $0.objectValue?["id"]?.stringValue == id }?.objectValue
        }

        @Test(.timeLimit(.minutes(3))) func bboxLayersLimitAndWhatEachFeatureSays() async throws {
            let rig = try await Rig("features")
            defer { rig.close() }

            // Around the Meadow Overlook: the meadow section and the overlook (a point with a buffer).
            let overlook = try await rig.reply(#"{"features":{"bbox":[-119.7093,34.4568,-119.7090,34.4570]}}"#)
            #expect(overlook["type"] == .string("FeatureCollection") && overlook["truncated"] == .bool(false))
            #expect(overlook["correlation"] == .string("1"))
            #expect(Set(Self.ids(overlook)) == ["garden-sections/meadow", "garden-poi/meadow-overlook"], "\(Self.ids(overlook))")
            let meadow = try #require(Self.feature(overlook, "meadow"))
            #expect(meadow["type"] == .string("Feature"))
            let meadowProperties = try #require(meadow["properties"]?.objectValue)
            #expect(meadowProperties["layer"] == .string("garden-sections") && meadowProperties["name"] == .string("Meadow Section"))
            #expect(meadowProperties["buffer"] == .number(0) && meadowProperties["triggers"] == .array([.string("sections")]))
            #expect(meadowProperties["properties"]?.objectValue?["description"]?.stringValue?.hasPrefix("Native bunchgrass") == true)
            #expect(meadowProperties["truncated"] == nil)
            let geometry = try #require(meadow["geometry"]?.objectValue)
            #expect(geometry["type"] == .string("Polygon"))
            #expect(geometry["coordinates"]?.arrayValue?.first?.arrayValue?.first == .array([.number(-119.7109338), .number(34.4561275)]))
            // The overlook: the largest buffer of its two triggers, both named.
            let point = try #require(Self.feature(overlook, "meadow-overlook")?["properties"]?.objectValue)
            #expect(point["buffer"] == .number(40) && point["triggers"] == .array([.string("poi"), .string("poi-wide")]))
            #expect(Self.feature(overlook, "meadow-overlook")?["geometry"]
                == .object(["type": .string("Point"), "coordinates": .array([.number(-119.7091739), .number(34.4569203)])]))

            // 30 m east of the overlook: inside its 40 m buffer, so still there; 60 m east: not.
            #expect(Self.ids(try await rig.reply(#"{"features":{"bbox":[-119.70885,34.45691,-119.70884,34.45693],"layers":["garden-poi"]}}"#))
                == ["garden-poi/meadow-overlook"])
            #expect(Self.ids(try await rig.reply(#"{"features":{"bbox":[-119.70852,34.45691,-119.70851,34.45693],"layers":["garden-poi"]}}"#))
                == [])

            // The fleet's yard: its four fences, which no trigger watches (no buffer, no trigger).
            let fleet = try await rig.reply(#"{"features":{"bbox":[-119.70,34.42,-119.68,34.44]}}"#)
            #expect(Self.ids(fleet) == ["fleet/depot", "fleet/site-north", "fleet/site-east", "fleet/road"])
            let road = try #require(Self.feature(fleet, "road")?["properties"]?.objectValue)
            #expect(road["buffer"] == .null && road["triggers"] == .array([]))
            #expect(Self.feature(fleet, "road")?["geometry"]?.objectValue?["type"] == .string("LineString"))

            // Layers, in file order; every layer without `layers`.
            let poi = try await rig.reply(#"{"features":{"layers":["garden-poi"]}}"#)
            #expect(Self.ids(poi).count == 11 && Self.ids(poi).first == "garden-poi/entrance" && poi["truncated"] == .bool(false))
            let everything = try await rig.reply(#"{"features":{}}"#)
            #expect(Self.ids(everything).count == 4 + 11 + 7 && everything["truncated"] == .bool(false))
            #expect(Set(Self.ids(try await rig.reply(#"{"features":{"layers":["fleet","garden-sections"]}}"#)).map { $0.split(separator: "/")[0] })
                == ["fleet", "garden-sections"])

            // The limit: the first N, then `truncated`.
            let three = try await rig.reply(#"{"features":{"layers":["garden-poi"],"limit":3}}"#)
            #expect(Self.ids(three) == Array(Self.ids(poi).prefix(3)) && three["truncated"] == .bool(true))
            let eleven = try await rig.reply(#"{"features":{"layers":["garden-poi"],"limit":11}}"#)
            #expect(Self.ids(eleven).count == 11 && eleven["truncated"] == .bool(false))
            let box = try await rig.reply(#"{"features":{"bbox":[-119.72,34.45,-119.70,34.46],"limit":2}}"#)
            #expect(Self.ids(box).count == 2 && box["truncated"] == .bool(true))
        }

        @Test(.timeLimit(.minutes(3))) func aRuntimeFenceAppearsOnceItIsPublishedAndGoesWhenDeleted() async throws {
            let rig = try await Rig("features-runtime")
            defer { rig.close() }
            let query = #"{"features":{"bbox":[-119.601,34.399,-119.599,34.401],"layers":["jobs"]}}"#
            #expect(Self.ids(try await rig.reply(query)) == [])
            let feature = #"{"type":"Feature","properties":{"name":"Job 7","buffer":50,"crew":"north"},"geometry":{"type":"Point","coordinates":[-119.6,34.4]}}"#
            try rig.probe.client.publish(topic: "\(rig.h.prefix)/fences/jobs/job-7", payload: feature, qos: .atLeastOnce, retain: true)
            var reply = JSONObject()
            let appeared = await poll(timeout: .seconds(20)) {
                reply = (try? await rig.reply(query)) ?? JSONObject()
                return Self.ids(reply) == ["jobs/job-7"]
            }
            #expect(appeared, "\(reply)\n\(tail(rig.gateway.log))")
            let properties = try #require(Self.feature(reply, "job-7")?["properties"]?.objectValue)
            #expect(properties["name"] == .string("Job 7") && properties["buffer"] == .number(50))
            #expect(properties["triggers"] == .array([.string("jobs")]))
            #expect(properties["properties"]?.objectValue?["crew"] == .string("north"))
            #expect(Self.feature(reply, "job-7")?["geometry"] == .object(["type": .string("Point"), "coordinates": .array([.number(-119.6), .number(34.4)])]))

            try rig.probe.client.publish(topic: "\(rig.h.prefix)/fences/jobs/job-7", payload: [UInt8](), qos: .atLeastOnce, retain: true)
            #expect(await poll(timeout: .seconds(20)) { Self.ids((try? await rig.reply(query)) ?? ["features": .null]) == [] })
        }

        /// Thirty polygons of 2,000 positions (about 70 KB of GeoJSON each, 2 MB together): the
        /// reply stops before the one that would pass 900 KiB, says `truncated`, and gets
        /// through a broker that takes at most 1 MiB, with a large correlation counted in.
        @Test(.timeLimit(.minutes(3))) func aReplyStaysUnder900KiBAndSaysTruncated() async throws {
            var features: [String] = []
            for k in 0..<30 {
                let centre = (lat: 34.40 + Double(k) * 0.01, lon: -119.60)
                var ring: [String] = []
                for i in 0..<2000 {
                    let angle = Double(i) / 2000 * 2 * Double.pi
                    ring.append(String(format: "[%.12f,%.12f]", centre.lon + 0.003 * cos(angle), centre.lat + 0.002 * sin(angle)))
                }
                ring.append(ring[0])
                features.append(#"{"type":"Feature","id":"big-\#(k)","properties":{"name":"Big \#(k)"},"geometry":{"type":"Polygon","coordinates":[[\#(ring.joined(separator: ","))]]}}"#)
            }
            let rig = try await Rig(
                "features-budget", extraFences: ["big.geojson": #"{"type":"FeatureCollection","features":[\#(features.joined(separator: ","))]}"#])
            defer { rig.close() }
            let budget = 900 * 1024
            for correlation in ["1", String(repeating: "c", count: 60_000)] {
                let bytes = try await rig.replyBytes(#"{"features":{"layers":["big"]}}"#, correlation: correlation)
                let reply = try #require(try JSONReader.parse(bytes, file: "reply", dialect: .json).value.objectValue)
                let ids = Self.ids(reply)
                print("features budget: \(ids.count) of 30 big fences in \(bytes.count) bytes (correlation \(correlation.count) bytes)")
                #expect(bytes.count <= budget, "\(bytes.count) bytes")
                #expect(bytes.count > budget - 80_000, "the next fence (about 70 KB) would have fitted: \(bytes.count) bytes")
                #expect(reply["truncated"] == .bool(true) && reply["correlation"] == .string(correlation))
                #expect(ids == (0..<ids.count).map { "big/big-\($0)" } && ids.count > 5 && ids.count < 30, "\(ids)")
            }
            // With a bbox too, through the index of the fences no trigger watches.
            let two = try await rig.reply(#"{"features":{"bbox":[-119.61,34.395,-119.59,34.415]}}"#)
            #expect(Self.ids(two) == ["big/big-0", "big/big-1"] && two["truncated"] == .bool(false))
        }

        /// `partBytes`: the reply in messages of at most that many bytes, numbered in the order
        /// they come, each with the correlation, their features together the one-message reply's.
        @Test(.timeLimit(.minutes(3))) func partBytesSendsTheReplyInNumberedPartsWithinTheSize() async throws {
            let rig = try await Rig("features-parts")
            defer { rig.close() }
            func read(_ message: MQTTMessage) throws -> JSONObject {
                try #require(try JSONReader.parse(message.payload, file: "part", dialect: .json).value.objectValue)
            }
            let whole = try await rig.reply(#"{"features":{}}"#)
            #expect(Self.ids(whole).count == 22 && whole["part"] == nil && whole["parts"] == nil)

            let messages = try await rig.partReplies(#"{"features":{"partBytes":2048}}"#, correlation: "c-7")
            print("features in parts of 2048 bytes: \(messages.count) parts of \(messages.map(\.payload.count)) bytes")
            #expect(messages.count > 2)
            var features: [JSONValue] = []
            for (i, message) in messages.enumerated() {
                #expect(message.payload.count <= 2048, "part \(i + 1): \(message.payload.count) bytes")
                let part = try read(message)
                #expect(part["type"] == .string("FeatureCollection") && part["truncated"] == .bool(false))
                #expect(part["part"] == .number(Double(i + 1)) && part["parts"] == .number(Double(messages.count)), "\(part.keys)")
                #expect(part["correlation"] == .string("c-7"))
                features += part["features"]?.arrayValue ?? []
            }
            #expect(features == whole["features"]?.arrayValue)

            // The limit's cut says truncated in every part.
            let three = try await rig.partReplies(#"{"features":{"layers":["garden-poi"],"limit":3,"partBytes":1024}}"#)
            let threeParts = try three.map(read)
            #expect(threeParts.allSatisfy { $0["truncated"] == .bool(true) } && threeParts.count >= 1)
            #expect(threeParts.flatMap(Self.ids) == Array(Self.ids(whole).filter { $0.hasPrefix("garden-poi/") }.prefix(3)))

            // Nothing in the box: one empty part.
            let none = try await rig.partReplies(#"{"features":{"bbox":[10,10,11,11],"partBytes":1024}}"#)
            #expect(none.map(\.payloadText) == [#"{"type":"FeatureCollection","features":[],"truncated":false,"part":1,"parts":1,"correlation":"1"}"#])

            // A correlation that leaves a part no room for a feature is refused.
            let refused = try await rig.replyBytes(#"{"features":{"partBytes":1024}}"#, correlation: String(repeating: "c", count: 1000))
            let error = try #require(try JSONReader.parse(refused, file: "reply", dialect: .json).value.objectValue?["error"]?.stringValue)
            #expect(error.hasPrefix(#""features": "partBytes" 1024 is less than the "#), "\(error)")
        }

        /// Pages: each `offset` picks up where the truncated page before ended, and the pages
        /// together are the one-message reply.
        @Test(.timeLimit(.minutes(3))) func offsetPagesThroughTheWholeReply() async throws {
            let rig = try await Rig("features-pages")
            defer { rig.close() }
            let whole = Self.ids(try await rig.reply(#"{"features":{}}"#))
            var paged: [String] = []
            var pages = 0
            while pages < 20 {
                let page = try await rig.reply(#"{"features":{"limit":5,"offset":\#(paged.count)}}"#)
                pages += 1
                paged += Self.ids(page)
                guard page["truncated"] == .bool(true) else { break }
            }
            #expect(whole.count == 22 && pages == 5, "\(pages) pages")
            #expect(paged == whole)
        }

        @Test(.timeLimit(.minutes(3))) func badFeaturesQueriesGetAnErrorNamingTheKey() async throws {
            let rig = try await Rig("features-bad")
            defer { rig.close() }
            let cases: [(String, String)] = [
                (#"{"features":"all"}"#, #""features" needs an object"#),
                (#"{"features":{"bbox":[1,2,3]}}"#, #""features": "bbox" needs [west, south, east, north]: 4 numbers"#),
                (#"{"features":{"bbox":[0,10,1,5]}}"#, #""features": "bbox" south (10) must not exceed north (5)"#),
                (#"{"features":{"bbox":[0,0,200,1]}}"#, #""features": "bbox" west and east must be longitudes within -180...180"#),
                (#"{"features":{"bbox":[0,-95,1,1]}}"#, #""features": "bbox" south and north must be latitudes within -90...90"#),
                (#"{"features":{"layers":"garden-poi"}}"#, #""features": "layers" needs an array of layer name strings"#),
                (#"{"features":{"layers":["garden-poi","nope"]}}"#, #""features": "layers" names no fence layer "nope" (layers: "#),
                (#"{"features":{"limit":0}}"#, #""features": "limit" needs an integer within 1...10000, found 0"#),
                (#"{"features":{"limit":10001}}"#, #""features": "limit" needs an integer within 1...10000, found 10001"#),
                (#"{"features":{"limit":1.5}}"#, #""features": "limit" needs an integer within 1...10000, found 1.5"#),
                (#"{"features":{"where":"x"}}"#, #""features": unknown key "where" (expected "bbox", "layers", "limit", "offset" or "partBytes")"#),
                (#"{"features":{"partBytes":1023}}"#, #""features": "partBytes" needs an integer within 1024...921600, found 1023"#),
                (#"{"features":{"offset":-1}}"#, #""features": "offset" needs an integer within 0...100000000, found -1"#),
            ]
            for (query, error) in cases {
                let reply = try await rig.reply(query)
                #expect(reply["error"]?.stringValue?.hasPrefix(error) == true, "\(query): \(reply)")
                #expect(reply["correlation"] == .string("1") && reply["features"] == nil, "\(query): \(reply)")
            }
            // A reply topic outside the replies prefix gets the refusal on the default topic, as every query.
            try rig.probe.client.publish(
                topic: "\(rig.h.prefix)/query/\(rig.h.gatewayID)", payload: #"{"features":{},"replyTo":"elsewhere","correlation":9}"#,
                qos: .atLeastOnce)
            let refusal = await poll(timeout: .seconds(20)) {
                rig.probe.received(on: "\(rig.h.prefix)/query/\(rig.h.gatewayID)/reply").contains {
                    $0.payloadText.contains("replies go only to topics under") && $0.payloadText.contains(#""correlation":9"#)
                }
            }
            #expect(refusal)
        }
    }
}
