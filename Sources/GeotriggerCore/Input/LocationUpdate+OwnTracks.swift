extension LocationUpdate {
    /// The OwnTracks `_type: location` payload of this update (what the `owntracks` format reads):
    /// `lat`, `lon`, `tst` (whole seconds), and when known `acc`, `alt` (m), `vel` (km/h) and
    /// `cog` (degrees) as whole numbers, like the OwnTracks apps send them; `tid` is the tracker
    /// id, by default the last two characters of the device id.
    public func owntracksPayload(trackerID: String? = nil) -> JSONValue {
        var object: JSONObject = [
            "_type": .string("location"), "tid": .string(trackerID ?? String(device.suffix(2))),
            "lat": .number(lat), "lon": .number(lon), "tst": .number(time.rounded(.down)),
        ]
        if let accuracy { object["acc"] = .number(accuracy.rounded()) }
        if let altitude { object["alt"] = .number(altitude.rounded()) }
        if let speed { object["vel"] = .number((speed * 3.6).rounded()) }
        if let heading { object["cog"] = .number(heading.rounded()) }
        return .object(object)
    }
}
