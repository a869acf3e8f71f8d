import Testing

@testable import GeotriggerCore

/// `trips` is the trigger name of trip events (docs/trips.md "Events"): no trigger of the
/// config, and no layer file whose trigger takes its name, may have it.
@Suite struct ReservedTriggerNameTests {
    @Test func aConfigTriggerNamedTripsIsRefused() throws {
        let issues = try EngineTriggerTests.issues("[{name: 'trips'}, {name: 'trip'}]")
        #expect(issues.map(\.description) == [
            #"triggers[0] ("trips"): name: "trips" is reserved: trip events are published under it (PREFIX/events/trips/DEVICE, docs/trips.md); choose another name"#,
        ])
    }

    @Test func aLayerFileNamedTripsIsRefusedWithoutTriggers() throws {
        let layer = FenceLayer(name: "trips", file: "fences/trips.geojson", fences: EngineTriggerTests.layers()[0].fences)
        let issues = try EngineTriggerTests.issues(nil, layers: [layer])
        #expect(issues.map(\.description) == [
            #"fences/trips.geojson: the trigger made for this layer takes its name: "trips" is reserved: trip events are published under it (PREFIX/events/trips/DEVICE, docs/trips.md); choose another name"#,
        ])
        // With triggers in the config, the layer is only watched: its name is free.
        #expect(try EngineTriggerTests.issues("[{name: 'routes', fences: ['trips']}]", layers: [layer]).isEmpty)
    }
}
