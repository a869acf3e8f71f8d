// The track readers (GPX, TCX, KML, NMEA, JSON lines, OwnTracks recorder, GeoJSON, and format
// detection): the first byte picks the format, the rest is the file. A track read is then
// turned into replay updates and walked as a simulation route, as `replay` and `simulate` do.
import GeotriggerCore

private let files: [(name: String, format: TrackFormat?)] = [
    ("walk.gpx", .gpx), ("walk.nmea", .nmea), ("walk.jsonl", .jsonLines),
    ("rec/alice/phone/2026-01.rec", .owntracksRecorder), ("walk.geojson", .geojson), ("walk", nil),
    ("walk.tcx", .tcx), ("walk.kml", .kml),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTracks(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let file = files[Int(data[0]) % files.count]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    guard let track = try? TrackReader.read(bytes, file: file.name, format: file.format) else { return 0 }
    fuzzCheck(!track.points.isEmpty, "a track without points was returned")
    for p in track.points {
        fuzzCheck((-90...90).contains(p.lat) && (-180...180).contains(p.lon), "point out of range: \(p)")
    }
    if let updates = try? track.replayUpdates(file: file.name, defaultDevice: "fuzz", speed: 1.4, start: fuzzNow) {
        for u in updates.prefix(64) { _ = ISO8601Time.format(u.time, milliseconds: true) }
    }
    if var walker = try? RouteWalker(
        route: track.coordinates, file: file.name, devices: ["a", "b"], speed: 10, interval: 1, accuracy: 5,
        noise: 2, start: fuzzNow)
    {
        for _ in 0..<8 { guard walker.next() != nil else { break } }
    }
    return 0
}
