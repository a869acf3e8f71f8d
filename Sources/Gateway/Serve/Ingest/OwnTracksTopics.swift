import GeotriggerCore

/// Where an `owntracks` feed's phones get their commands (docs/phones.md): beside the device's
/// own topic in the feed's own topic tree, made from the device id by the feed's filter
/// (`tracks/+/+` and `alice/phone`: `tracks/alice/phone/cmd`), never a fixed `owntracks/`
/// tree the phone may not be reading. One per feed, shared by reference by the slots of its
/// devices (8 bytes each).
package final class OwnTracksTopics: Sendable {
    let filter: TopicFilter

    package init(filter: TopicFilter) {
        self.filter = filter
    }

    /// The OwnTracks apps' own tree, `owntracks/USER/DEVICE`.
    package static let standard = OwnTracksTopics(filter: TopicFilter.owntracksDefault)

    /// `DEVICE_TOPIC/leaf` (`cmd`) for `device`; `owntracks/DEVICE/leaf` only when the
    /// id does not fit the filter (it always does for an id the feed gave).
    func topic(beside device: String, _ leaf: String) -> String {
        (filter.topic(ofDevice: device) ?? "owntracks/\(device)") + "/" + leaf
    }
}

extension TopicFilter {
    /// `owntracks/+/+`.
    static let owntracksDefault: TopicFilter = {
        do { return try TopicFilter("owntracks/+/+") } catch { preconditionFailure("owntracks/+/+ is a valid filter: \(error)") }
    }()
}
