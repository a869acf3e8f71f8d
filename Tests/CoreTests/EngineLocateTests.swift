import Testing
@testable import GeotriggerCore

/// `geotrigger locate`'s core: fences near a point, per trigger, inside by the trigger's rule.
@Suite struct EngineLocateTests {
    typealias Kit = EngineTestKit

    @Test func listsFencesWithin100MetresOrTheAccuracyNearestFirst() throws {
        let fences = [
            Kit.zone, Kit.box("far", name: "Far", west: 150, east: 250, south: -50, north: 50),
            Kit.box("near", west: 60, east: 100, south: -50, north: 50),
        ]
        let snapshot = try Kit.snapshot(fences, triggers: """
            [{name: 'plain'}, {name: 'circle', buffer: 2, accuracyMode: 'useGeometryWithAccuracy'}]
            """)
        let here = Kit.at(east: 5, north: 0)  // 5 m east of the zone's edge
        let results = snapshot.locate(here, accuracy: 6)
        #expect(results.map { "\($0.trigger) \($0.fence) \($0.inside)" } == [
            "circle z1 true",  // 3 m outside the 2 m buffer, within the 6 m circle
            "plain z1 false", "circle near false", "plain near false",
        ])
        #expect(abs(results[0].distance - 3) < 0.01 && abs(results[1].distance - 5) < 0.01)
        #expect(results[1].json.serialized() == #"{"trigger":"plain","layer":"zones","fence":"z1","name":"Zone One","inside":false,"distance":5}"#)
        // A wide accuracy reaches further than 100 m.
        #expect(snapshot.locate(here, accuracy: 160).contains { $0.fence == "far" })
        #expect(!snapshot.locate(here, accuracy: nil).contains { $0.fence == "far" })
        #expect(snapshot.locate(Kit.at(east: -50, north: 0), accuracy: nil).first?.inside == true)
    }
}
