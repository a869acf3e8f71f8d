import Foundation
import GeotriggerCore
import MQTT
import Testing
import TestSupport

extension ServeTests {
    /// docs/topics-and-payloads.md "Inputs": bad input is dropped, counted under its reason and logged at most once
    /// per reason per minute; it never stops the gateway.
    @Suite struct BadInput {
        /// 14 kinds of bad input, twice each, each followed by a valid update: the gateway stays
        /// up, all 28 valid updates are accepted (and give their events), and each drop is counted
        /// under its reason in the retained status.
        @Test func floodOfBadInputIsCountedAndValidUpdatesStillFlow() async throws {
            let h = try ServeHarness("flood")
            defer { h.close() }
            let input = "\(h.prefix)-in"
            let gpsdPort = try FreePort.next()  // nobody listens: the gpsd feed is only there for its republish topic
            let configPath = try h.write("gw.json5", h.config(extra: """
                input: { maxPayload: 512, maxFutureSkew: 300 },
                feeds: [
                  { name: "phones", topic: "owntracks/+/+", format: "owntracks" },
                  { name: "fleet", topic: "\(input)/fleet/+/+/location", format: "json" },
                  { name: "self", gpsd: { host: "127.0.0.1", port: \(gpsdPort) }, republish: true },
                ],
                triggers: [
                  { name: "sections", fences: ["garden-sections"],
                    filter: "DefaultValue($locationupdate.horizontalaccuracy, 0) < 100" },
                ],
                """))
            let watcher = try await h.probe("watcher", subscribe: [h.eventsFilter(), h.statusTopic])
            let publisher = try await h.probe("publisher")
            let gateway = try h.startGateway(config: configPath)
            #expect(await watcher.waitStatus(h.statusTopic) { $0.status == "started" }.ok, "\(tail(gateway.log))")

            let t0 = fixTimeBase()
            let now = Date().timeIntervalSince1970
            let fleetTopic = "\(input)/fleet/flood/v1/location"
            let phoneTopic = "owntracks/bob/phone"
            var lastFleetTime = t0
            var fleetCount = 0
            var phoneTime = t0
            // flood/v1 alternates outside / inside the meadow (an event each time after the first);
            // bob/phone stays outside everything.
            func validUpdate(_ index: Int) -> (String, [UInt8]) {
                if index % 2 == 0 {
                    fleetCount += 1
                    lastFleetTime = t0 + 10 * Double(fleetCount)
                    let inside = fleetCount % 2 == 0
                    return (fleetTopic, Array(Payload.json(
                        lat: inside ? 34.4573 : 34.4570, lon: inside ? -119.7102 : -119.7125, time: lastFleetTime, accuracy: 5).utf8))
                }
                phoneTime += 7
                return (phoneTopic, Array(Payload.owntracks(lat: 34.4525, lon: -119.7102, tst: phoneTime, acc: 5, tid: "bp").utf8))
            }
            let badInputs: [(reason: DropReason, make: () -> (String, [UInt8]))] = [
                (.notJSON, { (fleetTopic, Array("this is not JSON".utf8)) }),
                (.invalidUTF8, { (fleetTopic, Array("{\"lat\":34.45,\"lon\":-119.71,\"time\":\"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8)) }),
                (.oversize, { (fleetTopic, Array("{\"lat\":34.45,\"lon\":-119.71,\"time\":\(t0),\"pad\":\"\(String(repeating: "x", count: 600))\"}".utf8)) }),
                (.missingField, { (fleetTopic, Array("{\"lat\":34.45,\"lon\":-119.71}".utf8)) }),
                (.wrongType, { (fleetTopic, Array("{\"lat\":\"34.45\",\"lon\":-119.71,\"time\":\(t0 + 1000)}".utf8)) }),
                (.notFinite, { (fleetTopic, Array("{\"lat\":1e999,\"lon\":-119.71,\"time\":\(t0 + 1000)}".utf8)) }),
                (.outOfRange, { (fleetTopic, Array("{\"lat\":95,\"lon\":-119.71,\"time\":\(t0 + 1000)}".utf8)) }),
                (.futureTime, { (fleetTopic, Array(Payload.json(lat: 34.45, lon: -119.71, time: (now + 3600).rounded()).utf8)) }),
                // Its `_type` holds a line break and a forged record: the log escapes it (checked below).
                (.ignoredType, { (phoneTopic, Array("{\"_type\":\"waypoint\\nerror [geotrigger] forged record=1\",\"desc\":\"home\",\"lat\":34.45,\"lon\":-119.71,\"tst\":\(Int(t0))}".utf8)) }),
                (.badDeviceId, { ("\(input)/fleet//x/location", Array(Payload.json(lat: 34.45, lon: -119.71, time: t0 + 1000).utf8)) }),
                (.ownEcho, { ("owntracks/gateway/\(h.gatewayID)", Array(Payload.owntracks(lat: 34.45, lon: -119.71, tst: t0 + 1000).utf8)) }),
                (.outOfOrder, { (fleetTopic, Array(Payload.json(lat: 34.4570, lon: -119.7125, time: lastFleetTime - 5, accuracy: 5).utf8)) }),
                (.duplicate, { (fleetTopic, Array(Payload.json(lat: 34.4570, lon: -119.7125, time: lastFleetTime, accuracy: 5).utf8)) }),
                // The only trigger's filter rejects it (accuracy 500 m).
                (.filtered, { ("\(input)/fleet/flood/f1/location", Array(Payload.json(lat: 34.4573, lon: -119.7102, time: lastFleetTime + 1, accuracy: 500).utf8)) }),
            ]
            #expect(Set(badInputs.map(\.reason)).count == 14)

            var published = 0
            var valid = 0
            for round in 0..<2 {
                for (i, bad) in badInputs.enumerated() {
                    let (badTopic, badPayload) = bad.make()
                    try publisher.client.publish(topic: badTopic, payload: badPayload, qos: .atLeastOnce)
                    let (topic, payload) = validUpdate(round * badInputs.count + i)
                    try publisher.client.publish(topic: topic, payload: payload, qos: .atLeastOnce)
                    published += 2
                    valid += 1
                }
            }
            #expect(valid == 28 && fleetCount == 14)
            // flood/v1: 14 updates alternating outside / meadow: 7 enters and 6 exits.
            let expectedEvents = 13

            let reasons = badInputs.map(\.reason)
            let settled = await watcher.waitStatus(h.statusTopic) { status in
                status.counter("received") == published && status.counter("accepted") == valid
                    && status.counter("events") == expectedEvents
                    && reasons.allSatisfy { status.dropped($0.rawValue) == 2 }
            }
            let statusText = settled.status.map(\.description) ?? "none"
            #expect(settled.ok, "status: \(statusText)\n\(tail(gateway.log))")
            #expect(gateway.isRunning)
            #expect(await poll { receivedEvents(watcher, prefix: h.prefix).count == expectedEvents })
            let events = receivedEvents(watcher, prefix: h.prefix).map(\.event)
            #expect(events.allSatisfy { $0["device"] == .string("flood/v1") && $0["fence"]?.objectValue?["id"] == .string("meadow") })
            #expect(events.filter { $0["type"] == .string("enter") }.count == 7)

            // Logged at most once per reason per minute: the decoder's reasons once each.
            let log = gateway.log
            for reason in [DropReason.notJSON, .invalidUTF8, .oversize, .missingField, .wrongType, .notFinite, .outOfRange,
                           .futureTime, .ignoredType, .badDeviceId] {
                let lines = log.split(separator: "\n").filter { $0.contains("dropped input") && $0.contains(" reason=\(reason.rawValue)") }
                #expect(lines.count == 1, "\(reason.rawValue): \(lines.count) log lines\n\(tail(log))")
            }
            // A client's text cannot start a log record of its own.
            #expect(!log.split(separator: "\n").contains { $0.hasPrefix("error [geotrigger] forged") }, "\(tail(log))")
            #expect(log.contains(#"detail="_type 'waypoint\nerror [geotrigger] forged record=1' is not a location""#), "\(tail(log))")
            #expect(gateway.terminate() == 0)
        }
    }
}
