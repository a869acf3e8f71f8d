extension String {
    /// The longest prefix of at most `limit` UTF-8 bytes that ends on a character's boundary
    /// (what the gateway keeps of text a client or a fence file may make arbitrarily long).
    public func prefix(utf8Bytes limit: Int) -> Substring {
        guard utf8.count > limit else { return self[...] }
        var kept = 0
        var end = startIndex
        for character in self {
            let size = character.utf8.count
            if kept + size > limit { break }
            kept += size
            end = index(after: end)
        }
        return self[..<end]
    }
}
