/// The query replies being written, per querying user (docs/limits.md): at most ``perUser``
/// at a time, so one dispatcher asking for large replies faster than they go out cannot fill
/// the gateway's memory and its connection with them, nor hold up the others' replies.
///
/// A reply is being written from when its query is taken until the broker has acknowledged
/// every part of it (or no part could be published). The querying user is the first level of
/// the reply topic under `PREFIX/replies/` (``user(ofReplyTopic:repliesPrefix:)``). The book is
/// a value: ``QueryService`` keeps it under its lock, asks it before answering a query, tells
/// it the message ids of the parts once published (on the network thread, so before their
/// acknowledgements can be read) and hands it every acknowledgement; tested alone.
struct ReplyWriting: Sendable {
    /// Replies one querying user may have being written at a time.
    static let perUser = 4

    /// Replies being written, per user.
    private(set) var writing: [String: Int] = [:]
    /// The parts published and not acknowledged: their user, and whether the part is its
    /// reply's last (the broker acknowledges a connection's QoS 1 messages in order).
    private var parts: [Int32: (user: String, last: Bool)] = [:]

    /// The querying user of a reply to `topic`: its first level under `repliesPrefix`
    /// (`PREFIX/replies/`), or the whole topic for one elsewhere (the default reply topic).
    static func user(ofReplyTopic topic: String, repliesPrefix: String) -> String {
        guard topic.hasPrefix(repliesPrefix) else { return topic }
        return String(topic.dropFirst(repliesPrefix.count).prefix { $0 != "/" })
    }

    /// Replies being written, of every user.
    var count: Int { writing.values.reduce(0, +) }

    /// Takes a slot for one more reply of `user`; false when it has ``perUser`` being written.
    mutating func begin(user: String) -> Bool {
        let current = writing[user, default: 0]
        guard current < Self.perUser else { return false }
        writing[user] = current + 1
        return true
    }

    /// The reply `begin` took a slot for was published as the parts `messageIDs`, in order
    /// (empty: none could be; the slot is given back at once).
    mutating func published(user: String, messageIDs: [Int32]) {
        guard let lastID = messageIDs.last else { return end(user) }
        for id in messageIDs { parts[id] = (user, id == lastID) }
    }

    /// The broker acknowledged message `id`: whether it was a reply's part (its last ends the
    /// reply and gives its slot back).
    mutating func acknowledged(_ id: Int32) -> Bool {
        guard let part = parts.removeValue(forKey: id) else { return false }
        if part.last { end(part.user) }
        return true
    }

    private mutating func end(_ user: String) {
        let left = writing[user, default: 1] - 1
        writing[user] = left > 0 ? left : nil
    }
}
