import Foundation
import MQTT
import Testing
import TestSupport
@testable import Gateway

@Suite struct FeedShardTests {
    @Test func parsesKOfN() {
        #expect(FeedShard("0/3") == FeedShard(index: 0, count: 3))
        #expect(FeedShard("2/3")?.description == "2/3")
        for bad in ["3/3", "-1/3", "0/0", "1", "a/3", "1/3/4", "/3", " 1/3", "+1/3"] { #expect(FeedShard(bad) == nil, "\(bad)") }
    }

    /// Every device lands in exactly one shard, and the shards are not badly unbalanced.
    @Test func eachDeviceInExactlyOneShard() throws {
        let shards = (0..<3).map { FeedShard(index: $0, count: 3)! }
        var sizes = [0, 0, 0]
        for i in 0..<3000 {
            let owners = shards.filter { $0.contains("v/d\(i)") }
            try #require(owners.count == 1)
            sizes[owners[0].index] += 1
        }
        #expect(sizes.allSatisfy { $0 > 850 }, "\(sizes)")
    }

    @Test func configErrorsNameFileLineAndKey() throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("gw.json5", """
            {
              feeds: [ { name: "a", topic: "fleet/+/+/location", format: "json", shard: "3/3" } ],
            }
            """)
        #expect {
            try GatewayConfig.load(file: file)
        } throws: { error in
            let text = "\(error)"
            return text.contains("gw.json5:2:") && text.contains("feeds[0].shard") && text.contains("\"3/3\"")
        }
        let good = try directory.write("ok.json5", #"{ feeds: [ { name: "a", topic: "f/+", format: "json", shard: "1/3" } ] }"#)
        guard case .mqtt(_, _, _, let shard, _) = try GatewayConfig.load(file: good).feeds[0] else { Issue.record("mqtt feed"); return }
        #expect(shard == FeedShard(index: 1, count: 3))
    }
}

/// `feeds[].shard` on one mosquitto: three gateways on the same feed, each device's events
/// from exactly one of them, all together the single-gateway events.
@Suite(.serialized) struct ShardFallbackTests {
    @Test(.timeLimit(.minutes(3))) func threeGatewaysEachDeviceOnExactlyOne() async throws {
        let broker = try MosquittoProcess()
        let directory = try TemporaryDirectory()
        try FleetDrive.installFences(in: directory)
        let drive = FleetDrive(count: 30)
        func config(_ k: Int?) throws -> String {
            let shard = k.map { #", shard: "\#($0)/3""# } ?? ""
            return try directory.write("gw\(k ?? 9).json5", """
                { gateway: { id: "gw-\(k ?? 9)", database: "gw\(k ?? 9).db" },
                  broker: { port: \(broker.port) },
                  feeds: [ { name: "fleet", topic: "fleet/+/+/location", format: "json"\(shard) } ] }
                """)
        }
        let expected = try drive.expectedEvents(config: try config(nil), in: directory)
        let expectedTotal = expected.values.reduce(0, +)
        try #require(expectedTotal > 100, "the drive should cross many fences: \(expected.count) keys")

        let watcher = try MQTTProbe(port: broker.port, clientId: "shard-watch-\(getpid())")
        defer { watcher.stop() }
        watcher.collect()
        try watcher.client.subscribe("geotriggers/events/#", qos: .atLeastOnce)
        try watcher.client.subscribe("geotriggers/status/+", qos: .atLeastOnce)
        try watcher.client.start()
        #expect(await watcher.waitSubscribed("geotriggers/events/#"))

        var gateways: [GatewayProcess] = []
        defer { for g in gateways { g.terminate() } }
        for k in 0..<3 {
            gateways.append(try GatewayProcess(["serve", "--config", try config(k)], directory: directory.path, logFile: directory.file("gw\(k).log")))
        }
        // Every gateway said `started` (so it has subscribed).
        #expect(await poll(timeout: .seconds(60)) {
            (0..<3).allSatisfy { watcher.statusCount(GatewayStatus.topic(gatewayID: "gw-\($0)"), saying: "started") >= 1 }
        }, "\(gateways.map(\.log))")

        let publisher = try MQTTProbe(port: broker.port, clientId: "shard-pub-\(getpid())")
        defer { publisher.stop() }
        try publisher.client.start()
        #expect(await publisher.waitConnected())
        var ids: [Int32] = []
        for step in 0..<drive.rounds {
            for update in drive.round(step) {
                ids.append(try publisher.client.publish(topic: update.topic, payload: update.payload, qos: .atLeastOnce))
            }
        }
        #expect(await publisher.waitAcknowledged(ids))

        let events = { EventTally(watcher.messages.all.filter { $0.topic.hasPrefix("geotriggers/events/") }) }
        #expect(await poll(timeout: .seconds(60)) { events().total >= expectedTotal }, "\(events().total) of \(expectedTotal)")
        let tally = events()
        #expect(tally.devicesOnSeveralGateways.isEmpty, "\(tally.devicesOnSeveralGateways)")
        #expect(tally.merged == expected, "\(difference(tally.merged, expected))")
        #expect(Set(tally.byGateway.keys) == ["gw-0", "gw-1", "gw-2"])
        for (device, gateway) in tally.gatewayOfDevice {
            #expect(gateway == "gw-\(FeedShard.shard(of: device, count: 3))", "\(device)")
        }
    }
}
