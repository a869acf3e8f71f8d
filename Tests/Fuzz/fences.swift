// The GeoJSON fence parser with geometry preparation: a layer file is parsed (each valid
// feature prepared by the parser), an `EngineSnapshot` is built from it with the default
// trigger (the layer's own `geotrigger` defaults, Arcade messages included), every prepared
// fence answers containment and distance queries, and one device monitor takes two updates.
import GeotriggerCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFences(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    let (layer, _) = FenceLayerParser.parse(bytes, file: "fuzz.geojson", layer: "fuzz")
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
