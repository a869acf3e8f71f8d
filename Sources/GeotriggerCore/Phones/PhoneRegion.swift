/// One region as an OwnTracks phone watches it: a circle named by `rid` (`LAYER/FENCE`), the
/// OwnTracks `_type: waypoint` the gateway pushes in a `setWaypoints` command (docs/phones.md).
public struct PhoneRegion: Sendable, Equatable {
    /// `LAYER/FENCE`: stable across pushes, restarts and fence edits.
    public var rid: String
    /// The fence's name (else its id), at most ``maximumDescriptionBytes``.
    public var desc: String
    /// The circle's centre, in degrees rounded to 1e-6 (about 0.1 m).
    public var lat: Double
    public var lon: Double
    /// The circle's radius in whole metres, rounded up: the circle covers the buffered fence.
    public var rad: Int
    /// The waypoint's `tst`: the number of the phone's slot the region holds
    /// (``slotTime(_:)``). Android keys a phone's regions by `tst` and cannot delete one
    /// remotely, so a region that comes in takes the slot of one that left and replaces it
    /// there; iOS keys them by `rid`. A phone's transitions for the region carry it as `wtst`.
    public var tst: Int

    /// Longer fence names are cut (on a character boundary) for the phone's list.
    public static let maximumDescriptionBytes = 256

    public init(rid: String, desc: String, lat: Double, lon: Double, rad: Int, tst: Int) {
        (self.rid, self.desc, self.lat, self.lon, self.rad, self.tst) = (rid, desc, lat, lon, rad, tst)
    }

    /// The region of `fence` buffered by `buffer` metres: the smallest circle around it, in
    /// whole metres, grown by the rounding of its centre so that it still covers the fence.
    /// Its slot (`tst`) is given by the phone's ``PhoneRegionPlan``.
    public init(_ fence: PreparedFence, buffer: Double) {
        let circle = fence.enclosingCircle(buffer: buffer)
        rid = PhoneRegion.rid(layer: fence.fence.layer, fence: fence.fence.id)
        desc = PhoneRegion.description(fence.fence.name ?? fence.fence.id)
        lat = (circle.centre.lat * 1e6).rounded() / 1e6
        lon = (circle.centre.lon * 1e6).rounded() / 1e6
        // Rounding the centre moves it by at most ~0.08 m: one metre more keeps the cover.
        rad = Int((circle.radius + 1).rounded(.up))
        tst = 0
    }

    /// `LAYER/FENCE`.
    public static func rid(layer: String, fence: String) -> String { layer + "/" + fence }

    /// The `tst` of slot `slot`: 1,000,000 + slot, a time (January 1970) no region a person
    /// makes on the phone has, so the gateway's slots never replace those.
    public static func slotTime(_ slot: Int) -> Int { 1_000_000 + slot }

    /// The slot of a `tst`/`wtst`, if it is one of the gateway's.
    public static func slot(ofTime time: Double) -> Int? {
        let slot = time - 1_000_000
        guard slot >= 0, slot < Double(TriggerOptions.maximumPhoneRegions * 2), slot.rounded() == slot else { return nil }
        return Int(slot)
    }

    /// A fence's name as a region's `desc`: iOS reads a `:` as the start of a beacon's
    /// numbers, a `|` as a monitoring mode and a leading `+` as a following region, so those
    /// become `-`, `-` and nothing; at most ``maximumDescriptionBytes``.
    static func description(_ name: String) -> String {
        var text = String(name.map { $0 == ":" || $0 == "|" ? "-" : $0 })
        while text.hasPrefix("+") { text.removeFirst() }
        return String(text.prefix(utf8Bytes: maximumDescriptionBytes))
    }

    /// The same region in another slot.
    func inSlot(_ slot: Int) -> PhoneRegion {
        var region = self
        region.tst = PhoneRegion.slotTime(slot)
        return region
    }

    /// The region without its slot, to compare what a phone is given.
    var unslotted: PhoneRegion {
        var region = self
        region.tst = 0
        return region
    }

    /// A waypoint that removes this region from an iPhone: its `rid` with coordinates out of
    /// range, which iOS takes as "delete" and Android skips (docs/phones.md).
    public var removalJSON: JSONValue {
        .object([
            "_type": .string("waypoint"), "desc": .string(desc), "lat": .number(-1_000_000), "lon": .number(-1_000_000),
            "rad": .number(Double(rad)), "tst": .number(Double(tst)), "rid": .string(rid),
        ])
    }

    /// `{"_type": "waypoint", "desc", "lat", "lon", "rad", "tst", "rid"}`.
    public var waypointJSON: JSONValue {
        .object([
            "_type": .string("waypoint"), "desc": .string(desc), "lat": .number(lat), "lon": .number(lon),
            "rad": .number(Double(rad)), "tst": .number(Double(tst)), "rid": .string(rid),
        ])
    }
}
