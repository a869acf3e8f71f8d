import GeotriggerCore
import Testing
@testable import Gateway

@Suite struct OccupancyBookTests {
    func stay(_ fence: String, trigger: String = "t") -> DeviceMonitor.Stay {
        DeviceMonitor.Stay(trigger: trigger, layer: "l", fence: fence, since: 0, visit: "v")
    }

    let a = OccupancyKey(trigger: "t", layer: "l", fence: "a")
    let b = OccupancyKey(trigger: "t", layer: "l", fence: "b")

    /// A changed set is due at once, then not again within the interval (the newest set goes
    /// out when it has passed); an unchanged set is never due.
    @Test func changesAreDueAtMostOncePerInterval() {
        var book = OccupancyBook(interval: 1)
        book.update(device: "d1", stays: [stay("a")])
        book.update(device: "d2", stays: [stay("a"), stay("b")])
        let first = book.takeDue(now: 10)
        #expect(first == [a, b])
        let publishedA = book.published(a, at: 10), publishedB = book.published(b, at: 10)
        #expect(publishedA && publishedB)
        #expect(book.devices(in: a) == ["d1", "d2"] && book.count(b) == 1)
        book.update(device: "d1", stays: [])
        book.update(device: "d2", stays: [stay("a"), stay("b")])  // unchanged
        let early = book.takeDue(now: 10.5), later = book.takeDue(now: 11)
        #expect(early.isEmpty && later == [a])
        let again = book.published(a, at: 11)
        #expect(!again)  // not the first time
        #expect(book.devices(in: a) == ["d2"])
        let none = book.takeDue(now: 20)
        #expect(none.isEmpty)
    }

    /// Keys are per trigger; a recheck makes every published key due (the fences changed), and
    /// a cleared key is published afresh later.
    @Test func recheckAndClear() {
        var book = OccupancyBook(interval: 1)
        book.update(device: "d", stays: [stay("a"), stay("a", trigger: "u")])
        let due = book.takeDue(now: 0)
        #expect(due.count == 2)
        for key in due { _ = book.published(key, at: 0) }
        book.recheckPublished()
        let rechecked = book.takeDue(now: 5)
        #expect(rechecked.count == 2)
        let cleared = book.cleared(a), clearedAgain = book.cleared(a), afresh = book.published(a, at: 6)
        #expect(cleared && !clearedAgain && afresh)
    }
}
