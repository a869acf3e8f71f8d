import Testing

@testable import GeotriggerCore

@Suite struct WatchMaskTests {
    /// Bits in the inline word and in the array behave alike; a bit beyond the room is absent.
    @Test func insertAndContainsAcrossWords() {
        var mask = WatchMask(count: 200)
        let members = [0, 5, 63, 64, 127, 128, 199]
        for w in members { mask.insert(w) }
        #expect((0..<200).filter { mask.contains($0) } == members)
        #expect(!mask.contains(200) && !mask.contains(1_000))
        let empty = WatchMask()
        #expect(!(0..<300).contains { empty.contains($0) })
    }
}
