import Testing
@testable import GeotriggerCore

/// The trigger keys: parsing, defaults, merging over layer defaults, and error messages.
@Suite struct EngineTriggerTests {
    typealias Kit = EngineTestKit

    static func layers() -> [FenceLayer] {
        [
            FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone]),
            FenceLayer(
                name: "poi", file: "fences/poi.geojson",
                fences: [Kit.point("tap", east: -50, north: 0, featureIndex: 0), Kit.point("bench", east: -80, north: 0, buffer: 3, featureIndex: 1)],
                defaults: ["buffer": .number(8), "dwell": .number(60), "rule": .string("enter")]),
        ]
    }

    static func issues(_ triggers: String?, layers: [FenceLayer] = layers()) throws -> [TriggerIssue] {
        let value = try triggers.map { try Kit.json5($0) }
        do throws(TriggerError) {
            _ = try EngineSnapshot(layers: layers, configTriggers: value)
            return []
        } catch {
            return error.issues
        }
    }

    @Test func everyKeyIsReadAndMergedOverLayerDefaults() throws {
        let snapshot = try EngineSnapshot(
            layers: Self.layers(),
            configTriggers: try Kit.json5("""
                [{name: 'all', fences: ['zones', 'poi'], where: "$fencefeature.name != 'nothing'",
                  devices: ['workers/*', 'fleet/**'], buffer: 2, rule: 'enterOrExit', accuracyMode: 'useGeometryWithAccuracy',
                  spatialRelationship: 'enterContainsAndExitDoesNotIntersect', enterAfter: 5, exitAfter: 6, exitMargin: 7,
                  filter: '$locationupdate.horizontalaccuracy < 50', initial: 'baseline', staleAfter: 600,
                  message: "'Hi'", delivery: 'both'},
                 {name: 'poi-only', fences: ['poi'], dwell: null}]
                """))
        let settings = snapshot.settings
        #expect(settings.map { "\($0.trigger)/\($0.layer)" } == ["all/zones", "all/poi", "poi-only/poi"])
        let all = settings[1]
        #expect(all.buffer == 2 && all.rule == .enterOrExit && all.dwell == 60)  // dwell from the layer
        #expect(all.accuracyMode == .useGeometryWithAccuracy && all.spatialRelationship == .enterContainsAndExitDoesNotIntersect)
        #expect(all.enterAfter == 5 && all.exitAfter == 6 && all.exitMargin == 7 && all.initial == .baseline)
        #expect(all.staleAfter == 600 && all.delivery == .both && all.message == "'Hi'")
        #expect(all.devices?.map(\.pattern) == ["workers/*", "fleet/**"])
        #expect(all.applies(to: "workers/alice") && !all.applies(to: "workers/a/b") && all.applies(to: "fleet/x/y"))
        #expect(settings[0].dwell == nil && settings[0].rule == .enterOrExit)
        let poiOnly = settings[2]
        #expect(poiOnly.buffer == 8 && poiOnly.rule == .enter && poiOnly.dwell == 60)  // null: not set, layer default
        #expect(poiOnly.enterAfter == 0 && poiOnly.delivery == .local && poiOnly.initial == .enter)
        // Effective buffer: the feature's, else the trigger's, else the layer's.
        #expect(snapshot.buffer(fence: 2, watch: 1) == 3 && snapshot.buffer(fence: 1, watch: 1) == 2)
        #expect(snapshot.buffer(fence: 1, watch: 2) == 8)
    }

    @Test func missingTriggersMakesOnePerLayerAndEmptyMakesNone() throws {
        let perLayer = try EngineSnapshot(layers: Self.layers(), configTriggers: nil)
        #expect(perLayer.triggers.map(\.name) == ["zones", "poi"])
        #expect(perLayer.settings.map(\.layer) == ["zones", "poi"])
        #expect(perLayer.settings[1].buffer == 8 && perLayer.settings[1].rule == .enter)
        let none = try EngineSnapshot(layers: Self.layers(), configTriggers: .array([]))
        #expect(none.triggers.isEmpty && none.settings.isEmpty)
        var m = DeviceMonitor(device: "d", snapshot: none, now: 0)
        #expect(m.handle(Kit.update("d", east: -10, time: 0), receivedAt: 0).notifications.isEmpty)
    }

    @Test func errorsNameTheTriggerAndTheKeyPath() throws {
        let issues = try Self.issues("""
            [{name: 'ok'}, {name: 'garden', rule: 'entre', buffer: -1, dwell: 0, devices: ['a/***', 3],
              fences: ['zones', 'nope'], colour: 'red', accuracyMode: 5}, {rule: 'enter'}, {name: 'ok'}, {name: 'a/b'}, 7]
            """)
        let text = issues.map(\.description)
        #expect(text.contains(#"triggers[1] ("garden"): rule: expected one of enter, exit, enterOrExit, found "entre""#))
        #expect(text.contains(#"triggers[1] ("garden"): buffer: expected a number of 0 or more, found -1"#))
        #expect(text.contains(#"triggers[1] ("garden"): dwell: expected a number of seconds > 0 (or null for off), found 0"#))
        #expect(text.contains(#"triggers[1] ("garden"): devices[0]: "a/***": use * (one level) or ** (any levels), not 3 stars in a row"#))
        #expect(text.contains(#"triggers[1] ("garden"): devices[1]: expected a device pattern string, found a number"#))
        #expect(text.contains(#"triggers[1] ("garden"): fences[1]: no fence layer named "nope" (layers: poi, zones)"#))
        #expect(text.contains { $0.hasPrefix(#"triggers[1] ("garden"): colour: unknown key; expected one of name, fences, where"#) })
        #expect(text.contains(#"triggers[1] ("garden"): accuracyMode: expected one of useGeometry, useGeometryWithAccuracy, found 5"#))
        #expect(text.contains("triggers[2]: missing key name (the trigger name used in event topics)"))
        #expect(text.contains(#"triggers[3] ("ok"): name: the name "ok" is already used by triggers[0]"#))
        #expect(text.contains(#"triggers[4] ("a/b"): name: a trigger name is one topic level: it must not contain "/", found "a/b""#))
        #expect(text.contains("triggers[5]: expected a trigger object, found a number"))
        #expect(issues.count == 12)
        // The key path as data, for the config loader's line:column.
        let rule = try #require(issues.first { $0.key == "rule" })
        #expect(rule.origin == .config && rule.path == [.key("triggers"), .index(1), .key("rule")])
        #expect(issues.first { $0.key == "devices[0]" }?.path == [.key("triggers"), .index(1), .key("devices"), .index(0)])
    }

    /// `speedLimit` (docs/configuration.md "Trigger keys"): m/s > 0, or `{"property": NAME}`;
    /// from a layer's defaults too; anything else names the trigger and what was expected.
    @Test func speedLimitIsMetresPerSecondOrAFenceProperty() throws {
        let layers = [
            FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone]),
            FenceLayer(
                name: "roads", file: "fences/roads.geojson", fences: [Kit.box("r1", layer: "roads", west: 0, east: 50, south: 0, north: 50)],
                defaults: ["speedLimit": .object(["property": .string("maxspeed")])]),
        ]
        let snapshot = try EngineSnapshot(
            layers: layers,
            configTriggers: try Kit.json5("[{name: 'fixed', speedLimit: 14}, {name: 'inherited'}, {name: 'none', fences: ['zones']}]"))
        #expect(snapshot.settings.map(\.speedLimit) == [.fixed(14), .fixed(14), nil, .property("maxspeed"), nil])
        #expect(snapshot.rules.map(\.speedLimited) == [true, true, false, true, false])
        let issues = try Self.issues(
            """
            [{name: 'slow', speedLimit: 0}, {name: 'text', speedLimit: '50 mph'}, {name: 'key', speedLimit: {prop: 'maxspeed'}},
             {name: 'nameless', speedLimit: {property: ''}}, {name: 'off', speedLimit: null}]
            """, layers: [layers[0]])
        #expect(issues.map(\.description) == [
            #"triggers[0] ("slow"): speedLimit: expected a speed in m/s > 0 or {"property": NAME}, found 0"#,
            #"triggers[1] ("text"): speedLimit: expected a speed in m/s > 0 or {"property": NAME}, found "50 mph""#,
            #"triggers[2] ("key"): speedLimit: expected a speed in m/s > 0 or {"property": NAME}, found an object with "prop""#,
            #"triggers[3] ("nameless"): speedLimit: expected a speed in m/s > 0 or {"property": NAME}: property must be a property name, found """#,
        ])
        let defaults = FenceLayer(name: "zones", file: "fences/zones.geojson", fences: [Kit.zone], defaults: ["speedLimit": .number(-3)])
        #expect(try Self.issues(nil, layers: [defaults]).map(\.description) == [
            #"fences/zones.geojson: geotrigger.speedLimit: expected a speed in m/s > 0 or {"property": NAME}, found -3"#
        ])
    }

    @Test func layerDefaultsAreCheckedInTheirFile() throws {
        let layer = FenceLayer(
            name: "zones", file: "fences/zones.geojson", fences: [Kit.zone],
            defaults: ["rule": .string("sometimes"), "name": .string("x"), "message": .string("'a' +")])
        let issues = try Self.issues(nil, layers: [layer])
        #expect(issues.map(\.description) == [
            #"fences/zones.geojson: geotrigger.rule: expected one of enter, exit, enterOrExit, found "sometimes""#,
            #"fences/zones.geojson: geotrigger.name: not allowed here: a layer's defaults apply to the trigger named after the layer"#,
            "fences/zones.geojson: geotrigger.message: column 6: expected an expression, found the end of the expression",
        ])
        #expect(issues.first?.origin == .layer(name: "zones", file: "fences/zones.geojson"))
        #expect(issues.first?.path == [.key("geotrigger"), .key("rule")])
    }

    @Test func pointOrLineWithoutBufferIsAnErrorNamingFileFeatureAndTrigger() throws {
        let layer = FenceLayer(name: "poi", file: "fences/poi.geojson", fences: [
            Kit.point("Cactus", east: 0, north: 0, featureIndex: 3),
            Fence(id: "path", layer: "poi", geometry: .lines([[Kit.at(east: 0, north: 0), Kit.at(east: 10, north: 0)]]), buffer: 2, featureIndex: 4),
        ])
        let issues = try Self.issues("[{name: 'walk'}]", layers: [layer])
        #expect(issues.map(\.description) == [
            #"fences/poi.geojson: feature 3 ("Cactus"): Point needs a buffer > 0 in trigger "walk" (set properties.buffer, the trigger's buffer or the layer's geotrigger.buffer)"#
        ])
        #expect(issues.first?.path == [.key("features"), .index(3)])
        #expect(try Self.issues("[{name: 'walk', buffer: 5}]", layers: [layer]).isEmpty)
        // A trigger whose `where` drops the point does not need its buffer.
        #expect(try Self.issues(#"[{name: 'walk', where: "$fencefeature.id == 'path'"}]"#, layers: [layer]).isEmpty)
    }

    @Test func expressionErrorsNameTheTriggerKeyAndColumn() throws {
        let issues = try Self.issues(#"[{name: 'g', message: "'You have entered ' + ", filter: '$fencefeature.name == 1'}]"#)
        let text = issues.map(\.description)
        #expect(text.count == 2)
        #expect(text.contains { $0.hasPrefix(#"triggers[0] ("g"): message: column "#) })
        #expect(text.contains(#"triggers[0] ("g"): filter: $fencefeature is not available in filter (it sees $locationupdate)"#))
        #expect(issues.first { $0.key == "message" }?.path == [.key("triggers"), .index(0), .key("message")])
    }

    @Test func whereSelectsFences() throws {
        let fences = [Kit.zone, Kit.box("z2", name: "Other", west: -300, east: -200, south: -50, north: 50)]
        let snapshot = try Kit.snapshot(fences, triggers: #"[{name: 'z', where: "$fencefeature.name == 'Other'"}]"#)
        var m = DeviceMonitor(device: "d", snapshot: snapshot, now: 0)
        #expect(m.handle(Kit.update("d", east: -10, time: 0), receivedAt: 0).notifications.isEmpty)
        #expect(m.handle(Kit.update("d", east: -250, time: 1), receivedAt: 1).notifications.map(\.fenceID) == ["z2"])
    }

    @Test func filterRejectsUpdatesWithoutChangingStateButKeepsTheDeviceAlive() throws {
        let snapshot = try Kit.snapshot(triggers: "[{name: 'z', staleAfter: 60, filter: '$locationupdate.horizontalaccuracy <= 20'}]")
        var m = DeviceMonitor(device: "d", snapshot: snapshot, now: 0)
        #expect(m.handle(Kit.update("d", east: -10, time: 0, accuracy: 5), receivedAt: 0).notifications.count == 1)
        let poor = m.handle(Kit.update("d", east: 100, time: 10, accuracy: 80), receivedAt: 50)
        #expect(poor.disposition == .filtered && poor.notifications.isEmpty && !poor.stateChanged && !poor.positionChanged)
        #expect(m.stays.count == 1 && m.lastUpdate?.time == 0)
        #expect(m.advance(to: 100).isEmpty)  // alive until 50 + 60
        #expect(m.advance(to: 110).first?.reason == .stale)
        // No accuracy at all: null <= 20 is false in Arcade, so filtered too.
        #expect(m.handle(Kit.update("d", east: -10, time: 20), receivedAt: 120).disposition == .filtered)
    }
}
