@testable import Gateway
import Testing

@Suite struct WarningsTests {
    @Test func atMostTheLimitAreKeptAndTheLastLineCountsTheRest() {
        let warnings = Warnings(logger: Logger(label: "test"), limit: 50)
        for n in 0..<49 { warnings.set("fence-\(n)", "fence \(n) rejected") }
        #expect(warnings.texts.count == 49)
        warnings.set("fence-49", "fence 49 rejected")
        #expect(warnings.texts.count == 50)
        #expect(warnings.texts.last == "fence 49 rejected")
        for n in 50..<1000 { warnings.set("fence-\(n)", "fence \(n) rejected") }
        let texts = warnings.texts
        #expect(texts.count == 50)
        #expect(texts[48] == "fence 48 rejected")
        #expect(texts[49] == "951 more warnings are in the log (the status keeps 50)")
        // A kept warning still updates and clears.
        warnings.set("fence-0", "fence 0 rejected again")
        #expect(warnings.texts.first == "fence 0 rejected again")
        warnings.clear("fence-0")
        #expect(warnings.texts.first == "fence 1 rejected")
        #expect(warnings.texts.count == 50)
    }
}
