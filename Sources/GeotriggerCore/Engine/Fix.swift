/// The fields of a ``LocationUpdate`` without its device id: what a monitor keeps of its last
/// accepted update (no reference to count on the hot path).
struct Fix: Sendable, Equatable {
    var lat: Double
    var lon: Double
    var time: Double
    var accuracy: Double?
    var speed: Double?
    var heading: Double?
    var altitude: Double?

    @inline(__always)
    init(_ u: LocationUpdate) {
        lat = u.lat
        lon = u.lon
        time = u.time
        accuracy = u.accuracy
        speed = u.speed
        heading = u.heading
        altitude = u.altitude
    }

    func update(device: String) -> LocationUpdate {
        LocationUpdate(
            device: device, lat: lat, lon: lon, time: time, accuracy: accuracy, speed: speed, heading: heading,
            altitude: altitude)
    }
}
