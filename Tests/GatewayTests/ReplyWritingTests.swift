import Testing
@testable import Gateway

/// ``ReplyWriting``: at most 4 query replies being written per querying user, each until the
/// broker acknowledged its last part (docs/limits.md).
@Suite struct ReplyWritingTests {
    @Test func theQueryingUserIsTheFirstLevelUnderReplies() {
        let prefix = "geotriggers/replies/"
        #expect(ReplyWriting.user(ofReplyTopic: "geotriggers/replies/alice/map/1", repliesPrefix: prefix) == "alice")
        #expect(ReplyWriting.user(ofReplyTopic: "geotriggers/replies/console-1a2b", repliesPrefix: prefix) == "console-1a2b")
        #expect(ReplyWriting.user(ofReplyTopic: "geotriggers/query/gw-1/reply", repliesPrefix: prefix) == "geotriggers/query/gw-1/reply")
    }

    @Test func fourRepliesPerUserUntilTheirLastPartsAreAcknowledged() {
        var book = ReplyWriting()
        func begin(_ user: String) -> Bool { book.begin(user: user) }
        func acknowledged(_ id: Int32) -> Bool { book.acknowledged(id) }
        let firstFour = (0..<4).map { _ in begin("alice") }
        #expect(firstFour == [true, true, true, true])
        #expect(!begin("alice"))
        #expect(begin("bob"))
        book.published(user: "alice", messageIDs: [10, 11, 12])
        book.published(user: "alice", messageIDs: [13])
        book.published(user: "alice", messageIDs: [])  // none could be published: its slot is back
        #expect(book.writing["alice"] == 3 && book.count == 4)
        #expect(begin("alice"))
        #expect(!begin("alice"))
        // The first parts of a reply do not end it; its last does.
        #expect(acknowledged(10))
        #expect(acknowledged(11))
        #expect(!begin("alice"))
        #expect(acknowledged(12))
        #expect(begin("alice"))
        // Another owner's message, or one acknowledged already: not a reply's.
        #expect(!acknowledged(99))
        #expect(!acknowledged(12))
        #expect(acknowledged(13))
        // Left: three begun and not published yet.
        #expect(book.writing["alice"] == 3 && book.writing["bob"] == 1)
    }
}
