@testable import Gateway
import Testing

@Suite struct WarningsTests {
    @Test func atMostTheLimitAreKeptAndTheLastLineCountsTheRest() {
        let warnings = Warnings(logger: Logger(label: "test"), limit: 50)
        for n in 0..<49 { warnings.set("fence-\(n)", "fence \(n) rejected", origin: .client) }
        #expect(warnings.texts.count == 49)
        warnings.set("fence-49", "fence 49 rejected", origin: .client)
        #expect(warnings.texts.count == 50)
        #expect(warnings.texts.last == "fence 49 rejected")
        for n in 50..<1000 { warnings.set("fence-\(n)", "fence \(n) rejected", origin: .client) }
        let texts = warnings.texts
        #expect(texts.count == 50)
        #expect(texts[48] == "fence 48 rejected")
        #expect(texts[49] == "951 more warnings are in the log (the status keeps 50)")
        // A kept warning still updates and clears.
        warnings.set("fence-0", "fence 0 rejected again", origin: .client)
        #expect(warnings.texts.first == "fence 0 rejected again")
        warnings.clear("fence-0")
        #expect(warnings.texts.first == "fence 1 rejected")
        #expect(warnings.texts.count == 50)
    }

    /// The gateway's own faults always show: clients cause many warnings (one per rejected
    /// runtime fence), and only those are counted past the limit.
    @Test func aGatewayFaultShowsPastManyClientWarnings() {
        let warnings = Warnings(logger: Logger(label: "test"), limit: 50)
        for n in 0..<60 { warnings.set("fence-l/\(n)", "runtime fence l/\(n) rejected", origin: .client) }
        warnings.set("database", "the database /var/lib/geotrigger/g.db is full")
        var texts = warnings.texts
        #expect(texts.contains("the database /var/lib/geotrigger/g.db is full"), "\(texts.suffix(3))")
        #expect(texts.count == 50)
        #expect(texts[47] == "runtime fence l/47 rejected")
        #expect(texts.last == "12 more warnings are in the log (the status keeps 50)")
        // More faults still show; the client warnings make room.
        warnings.set("mqtt-remote", "lost the remote broker")
        texts = warnings.texts
        #expect(texts.count == 50 && texts.suffix(3) == [
            "the database /var/lib/geotrigger/g.db is full", "lost the remote broker",
            "13 more warnings are in the log (the status keeps 50)"])
        // Once the faults clear, the kept client warnings fill the status again.
        warnings.clear("database")
        warnings.clear("mqtt-remote")
        texts = warnings.texts
        #expect(texts.count == 50 && texts[48] == "runtime fence l/48 rejected")
        #expect(texts.last == "11 more warnings are in the log (the status keeps 50)")
    }
}
