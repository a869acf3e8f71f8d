// The GeoJSON fence parser with geometry preparation: a layer file is parsed whole and
// streamed, the two agreeing (each valid feature prepared by the parser), an `EngineSnapshot`
// is built from it with the default trigger (the layer's own `geotrigger` defaults, Arcade
// messages included), every prepared fence answers containment and distance queries, and one
// device monitor takes two updates.
import GeotriggerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFences(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let (layer, errors) = FenceLayerParser.parse(bytes, file: "fuzz.geojson", layer: "fuzz")

    // Read as the gateway reads a file (streamed, each plain feature parsed in place), in short
    // reads of 1 to 13 bytes so that features are cut by the window's end anywhere: the same
    // layer and the same messages as the whole text.
    let step = 1 + Int(bytes.first ?? 0) % 13
    let streamed = try? FenceLayerParser.parse(file: "fuzz.geojson", layer: "fuzz") { offset, buffer throws(FenceError) in
        let n = max(0, min(buffer.count, step, bytes.count - offset))
        for i in 0..<n { buffer[i] = bytes[offset + i] }
        return n
    }
    fuzzCheck(streamed?.layer == layer, "streamed layer differs from the whole text's")
    fuzzCheck(streamed?.errors.map(\.description) == errors.map(\.description), "streamed messages differ: \(streamed?.errors.map(\.description) ?? []) vs \(errors.map(\.description))")
    guard !layer.fences.isEmpty, let snapshot = try? EngineSnapshot(layers: [layer], configTriggers: nil) else { return 0 }

    var probes: [Coordinate] = []
    for fence in snapshot.fences.prefix(16) {
        let b = fence.bounds
        let centre = Coordinate(lat: (b.minLat + b.maxLat) / 2, lon: wrapped((b.minLon + b.maxLon) / 2))
        let corner = Coordinate(lat: b.minLat, lon: wrapped(b.minLon))
        let beyond = Coordinate(lat: min(90, b.maxLat + 0.0005), lon: wrapped(b.maxLon + 0.0005))
        for p in [centre, corner, beyond] {
            _ = fence.contains(p)
            let exact = fence.signedDistance(to: p)
            fuzzCheck(!exact.isNaN, "distance NaN at \(p) for \(fence.fence.label)")
            let bounded = fence.signedDistance(to: p, within: 50)
            if abs(exact) <= 50 - 1e-6 {
                fuzzCheck(abs(bounded - exact) <= 1e-6 * max(1, abs(exact)), "within 50: \(bounded) vs exact \(exact) at \(p)")
            } else if abs(exact) > 50 + 1e-6 {
                fuzzCheck(abs(bounded) > 50 - 1e-6 && abs(bounded) <= abs(exact) * (1 + 1e-9) + 1e-6, "beyond 50: \(bounded) vs exact \(exact) at \(p)")
                fuzzCheck((bounded < 0) == (exact < 0), "sign: \(bounded) vs exact \(exact) at \(p)")
            }
        }
        probes.append(centre)
    }

    var monitor = DeviceMonitor(device: "fuzz/device", snapshot: snapshot, now: fuzzNow)
    for (i, p) in probes.prefix(2).enumerated() {
        let update = LocationUpdate(device: "fuzz/device", lat: p.lat, lon: p.lon, time: fuzzNow - 10 + Double(i), accuracy: 20)
        _ = monitor.handle(update, receivedAt: fuzzNow)
    }
    return 0
}

/// `lon` moved into -180...180.
private func wrapped(_ lon: Double) -> Double {
    guard lon.isFinite else { return 0 }
    var l = lon.truncatingRemainder(dividingBy: 360)
    if l > 180 { l -= 360 }
    if l < -180 { l += 360 }
    return l
}
