import Foundation
@testable import Benchmarks
import Gateway
import GeotriggerCore
import Testing

/// `bench endurance`'s pure pieces: the /proc parsers, the broker config rewrite, the schedule
/// and the fleet's positions.
@Suite struct EnduranceBenchmarkTests {
    static let zonesPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/geometry/nyc-taxi-zones.geojson").standardized.path

    @Test func ioCountersAreRead() {
        let text = """
            rchar: 4821
            wchar: 1200
            syscr: 12
            syscw: 3
            read_bytes: 0
            write_bytes: 1245184
            cancelled_write_bytes: 40960

            """
        let io = DiskWrites.parseIO(text)
        #expect(io == DiskWrites.IO(writeBytes: 1_245_184, cancelledWriteBytes: 40_960))
        #expect(io?.net == 1_204_224)
        #expect(DiskWrites.parseIO("rchar: 1\nwrite_bytes: 5\n") == nil)
    }

    @Test func contextSwitchesAddBothKinds() {
        let status = "Name:\tmqtt-network\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t1500\nnonvoluntary_ctxt_switches:\t27\n"
        #expect(DiskWrites.contextSwitches(status: status) == 1527)
        #expect(DiskWrites.contextSwitches(status: "Name:\tx\n") == nil)
        // A thread that started between the readings counts from zero; one that ended is gone.
        #expect(DiskWrites.switches(from: [1: 10, 2: 5], to: [1: 14, 3: 7]) == 11)
    }

    @Test func theBlockDeviceLineIsFound() {
        let text = """
               7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
             254       0 vda 30106 5474 2676666 9087 44820 29671 4217752 15260 0 6916 24829 4512 0 564480 341 3926 139
             254       1 vda1 100 0 800 10 2000 10 96000 20 0 10 30 0 0 0 0 0 0

            """
        #expect(DiskWrites.sectorsWritten(diskstats: text, major: 254, minor: 0)! == ("vda", 4_217_752))
        #expect(DiskWrites.sectorsWritten(diskstats: text, major: 254, minor: 1)! == ("vda1", 96_000))
        #expect(DiskWrites.sectorsWritten(diskstats: text, major: 8, minor: 0) == nil)
        // glibc's dev_t encoding: 254:0 is 0xfe00; 259:65536 uses the high bits.
        #expect(DiskWrites.majorMinor(0xfe00) == (254, 0))
        #expect(DiskWrites.majorMinor(0xfe01) == (254, 1))
        #expect(DiskWrites.majorMinor(0x1_0001_0300) == (259, 0x100000))
    }

    @Test func theBrokerConfigKeepsPersistenceAndDropsWhatAPrivateRunCannotUse() throws {
        let shipped = try String(contentsOfFile: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../deploy/mosquitto/geotrigger.conf").standardized.path, encoding: .utf8)
        let config = EnduranceBenchmark.privateBrokerConfig(shipped: shipped, port: 18_831, persistence: "/var/tmp/w/broker/")
        let active = config.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.isEmpty }
        #expect(active.filter { $0.hasPrefix("listener") } == ["listener 18831 127.0.0.1"])
        #expect(active.contains("persistence_location /var/tmp/w/broker/"))
        #expect(active.contains("allow_anonymous true"))
        for dropped in ["password_file", "acl_file", "plugin", "http_dir", "protocol", "use_username_as_clientid", "allow_anonymous false"] {
            #expect(!active.contains { $0.hasPrefix(dropped) }, "\(dropped)")
        }
        // Every persistence and autosave line as shipped, and every other setting kept.
        for line in shipped.split(separator: "\n").map(String.init)
        where line.hasPrefix("persistence ") || line.hasPrefix("autosave") || line.hasPrefix("max_") || line.hasPrefix("set_tcp_nodelay") {
            #expect(active.contains(line), "\(line)")
        }
        #expect(!EnduranceBenchmark.persistenceLines(shipped).isEmpty)
    }

    @Test func fixTimesAreExactIntervalsApartAndNameTheirUpdate() {
        for (devices, interval) in [(1000, 10.0), (200, 10.0), (3000, 10.0), (7, 3.0)] {
            let schedule = EnduranceBenchmark.Schedule(devices: devices, interval: interval, start: 179_662_000_000)
            for i in [0, 1, devices - 1, devices, 5 * devices + devices / 2, 40 * devices + 3] {
                let d = i % devices
                #expect(schedule.fixHundredths(update: i + devices) - schedule.fixHundredths(update: i) == Int(interval * 100))
                #expect(schedule.update(device: d, fixHundredths: schedule.fixHundredths(update: i)) == i)
                let deciding = schedule.deciding(update: i, hold: 30)
                #expect(deciding % devices == d)
                #expect(schedule.fixHundredths(update: deciding) - schedule.fixHundredths(update: i) >= 3000)
                #expect(schedule.fixHundredths(update: deciding - devices) - schedule.fixHundredths(update: i) < 3000)
            }
        }
    }

    @Test func mixesAreReadAndSpreadOverTheFleet() throws {
        #expect(try EnduranceFleet.Mix.parse("parked=60,driving=20,edge=20") == EnduranceFleet.Mix(parked: 60, driving: 20, edge: 20))
        #expect(try EnduranceFleet.Mix.parse("edge=1") == EnduranceFleet.Mix(edge: 1))
        #expect(throws: UsageError.self) { try EnduranceFleet.Mix.parse("flying=3") }
        #expect(throws: UsageError.self) { try EnduranceFleet.Mix.parse("parked=0") }
        #expect(try EnduranceFleet.Mix.named("idle") == nil)
        let zones = try IndexBenchmark.loadTaxiZones(path: Self.zonesPath)
        let fleet = try EnduranceFleet(zones: zones, mix: try #require(try EnduranceFleet.Mix.named("mixed")), count: 100)
        #expect(fleet.count(.parked) == 60 && fleet.count(.driving) == 20 && fleet.count(.edge) == 20)
        // Interleaved: every run of ten devices has each kind.
        for start in stride(from: 0, to: 100, by: 10) {
            #expect(Set(fleet.devices[start..<start + 10].map(\.kind)).count == 3)
        }
        // Deterministic.
        let again = try EnduranceFleet(zones: zones, mix: EnduranceFleet.Mix(parked: 60, driving: 20, edge: 20), count: 100)
        #expect(again.position(device: 17, step: 42, interval: 10) == fleet.position(device: 17, step: 42, interval: 10))
    }

    @Test func edgeDevicesAlternateInsideAndOutsideTheirZoneAndParkedOnesStayInside() throws {
        let zones = try IndexBenchmark.loadTaxiZones(path: Self.zonesPath)
        let prepared = try zones.map { try PreparedFence($0) }
        let fleet = try EnduranceFleet(zones: zones, mix: EnduranceFleet.Mix(parked: 50, edge: 50), count: 200)
        for (d, device) in fleet.devices.enumerated() {
            let zone = prepared[device.zone]
            for k in 0..<20 {
                let p = fleet.position(device: d, step: k, interval: 10)
                switch device.kind {
                case .edge:
                    #expect(zone.contains(p) == fleet.isInsideStep(device: d, step: k), "device \(d) step \(k)")
                    #expect(zone.contains(p) != zone.contains(fleet.position(device: d, step: k + 1, interval: 10)))
                    #expect(abs(zone.signedDistance(to: p)) <= EnduranceFleet.edgeAcross.maximum + 0.5)
                case .parked:
                    #expect(zone.signedDistance(to: p) < -5, "device \(d) step \(k)")
                case .driving:
                    break
                }
            }
        }
    }

    @Test func drivingDevicesMoveAtTheirSpeed() throws {
        let zones = try IndexBenchmark.loadTaxiZones(path: Self.zonesPath)
        let prepared = try zones.map { try PreparedFence($0) }
        let fleet = try EnduranceFleet(zones: zones, mix: EnduranceFleet.Mix(driving: 1), count: 20)
        var zonesVisited = Set<Int>()
        for d in 0..<20 {
            for k in 0..<60 {
                let a = fleet.position(device: d, step: k, interval: 10), b = fleet.position(device: d, step: k + 1, interval: 10)
                let metres = Earth.distance(a, b)
                // 100 m per update, less where it turns at an end of its line.
                #expect(metres <= EnduranceFleet.speed * 10 * 1.02)
                if d == 0, let z = prepared.indices.first(where: { prepared[$0].contains(a) }) { zonesVisited.insert(z) }
            }
        }
        #expect(zonesVisited.count >= 2)
    }

    @Test func tripsAreReadAndBounded() throws {
        #expect(try EnduranceBenchmark.options([]).trips == 0)
        let o = try EnduranceBenchmark.options(["--fleet", "driving", "--trips", "1000"])
        #expect(o.trips == 1000 && o.devices == 1000)
        #expect(try EnduranceBenchmark.options(["--devices", "20", "--trips", "20"]).trips == 20)
        for bad in [["--trips", "1001"], ["--trips", "-1"], ["--trips", "2.5"], ["--devices", "20", "--trips", "21"], ["--fleet", "idle", "--trips", "1"]] {
            #expect(throws: UsageError.self, "\(bad)") { try EnduranceBenchmark.options(bad) }
        }
    }

    @Test func theCommitIntervalIsTheGatewaysUnlessGiven() throws {
        #expect(try EnduranceBenchmark.options([]).commitInterval == nil)
        #expect(try EnduranceBenchmark.options(["--commit-interval", "0.8"]).commitInterval == 0.8)
        for bad in [["--commit-interval", "-1"], ["--commit-interval", "6"], ["--commit-interval", "x"]] {
            #expect(throws: UsageError.self, "\(bad)") { try EnduranceBenchmark.options(bad) }
        }
    }

    @Test func aTripRequestNamesItsDeviceAndRoute() throws {
        let payload = EnduranceBenchmark.tripRequest(
            device: "d7", route: [Coordinate(lat: 40.75, lon: -73.99), Coordinate(lat: 40.7512345, lon: -73.9812345)])
        let object = try #require(try JSONReader.parse(Array(payload.utf8), file: "trip", dialect: .json).value.objectValue)
        #expect(object["device"]?.stringValue == "d7")
        #expect(object["corridor"]?.numberValue == 50)
        let route = try #require(object["route"]?.objectValue)
        #expect(route["type"]?.stringValue == "LineString")
        let coordinates = try #require(route["coordinates"]?.arrayValue).map { $0.arrayValue?.compactMap(\.numberValue) ?? [] }
        #expect(coordinates == [[-73.99, 40.75], [-73.9812345, 40.7512345]])
    }

    /// Each device's fixes, through the trips' own progress core along its route: a driving
    /// device starts its trip and follows it to and fro (turns included) without leaving it or
    /// arriving; a parked or edge device stays pending. So every fix of the run is decided on
    /// an open trip.
    @Test func everyDeviceFollowsItsTripRoute() throws {
        let zones = try IndexBenchmark.loadTaxiZones(path: Self.zonesPath)
        let fleet = try EnduranceFleet(zones: zones, mix: EnduranceFleet.Mix(parked: 1, driving: 2, edge: 1), count: 40)
        let interval = 10.0, seconds = 1500.0
        for (d, device) in fleet.devices.enumerated() {
            let line = fleet.tripRoute(device: d, seconds: seconds, interval: interval)
            if device.kind == .driving { #expect(line.count >= 4, "device \(d): turns at both ends of its line") }
            var progress = TripProgress(plan: TripPlan(route: try TripRoute(line), corridor: EnduranceBenchmark.tripCorridor))
            var events: [TripEvent.Kind] = []
            for k in 0...Int(seconds / interval) {
                let c = fleet.position(device: d, step: k, interval: interval)
                events += progress.update(LocationUpdate(device: "d\(d)", lat: c.lat, lon: c.lon, time: 1_800_000_000 + Double(k) * interval, accuracy: 5)).map(\.kind)
                #expect(progress.offBy.map { $0 < 10 } == true, "device \(d) step \(k)")
            }
            switch device.kind {
            case .driving:
                #expect(events == [.tripStarted], "device \(d)")
                #expect(progress.state == .onRoute)
                #expect(progress.along > EnduranceFleet.speed * seconds * 0.95)
            case .parked, .edge:
                #expect(events.isEmpty, "device \(d)")
                #expect(progress.state == .pending)
            }
        }
    }
}
