import GeotriggerCore
import Testing
@testable import Gateway

@Suite struct HomeAssistantDiscoveryTests {
    /// What Home Assistant takes as an object id: `[a-zA-Z0-9_-]+`.
    static func isObjectID(_ id: String) -> Bool {
        !id.isEmpty && id.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }
    }

    @Test func discoveryObjectIDsAreCleanStableAndDistinct() {
        #expect(HomeAssistantDiscovery.objectID("truck-7_a") == "truck-7_a")
        let slash = HomeAssistantDiscovery.objectID("workers/alice")
        let underscore = HomeAssistantDiscovery.objectID("workers_alice")
        #expect(slash.hasPrefix("workers_alice_") && slash.count == "workers_alice_".count + 8)
        #expect(slash != underscore && slash == HomeAssistantDiscovery.objectID("workers/alice"))
        let long = HomeAssistantDiscovery.objectID(String(repeating: "x", count: 200))
        #expect(long.count == 48 + 9 && long.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" })
        #expect(HomeAssistantDiscovery.objectID("ünï").allSatisfy { $0.isASCII })
    }

    /// A device literally named like another device's object id (`workers_alice_` and the hash
    /// of `workers/alice`) gets an object id of its own.
    @Test func aDeviceNamedLikeAnotherDevicesObjectIDGetsItsOwn() {
        let slash = HomeAssistantDiscovery.objectID("workers/alice")
        let literal = HomeAssistantDiscovery.objectID(slash)
        #expect(slash != literal, "workers/alice and \(slash) both map to \(literal)")
        // Nor do the ids of long texts, cut to 48 characters, meet a device named like them.
        let long = HomeAssistantDiscovery.objectID(String(repeating: "x", count: 200))
        #expect(HomeAssistantDiscovery.objectID(long) != long)
    }

    /// Plain ids (nothing to replace, not ending in `_` and 8 lowercase hex digits) keep their
    /// object id; every object id is valid, the same on every call, and different texts get
    /// different ones.
    @Test func objectIDsArePlainValidDeterministicAndDistinct() {
        for plain in ["alice", "truck-7_a", "alice_phone", "a_1234567", "a_123456789", "a_DEADBEEF", "a-deadbeef", "deadbeef",
                      "a_deadbeeg", String(repeating: "y", count: 48)] {
            #expect(HomeAssistantDiscovery.objectID(plain) == plain)
        }
        var texts = ["", "_", "-", "/", "//", "a/b", "a.b", "a b", "a_b", "a-b", "workers/alice", "workers_alice", "a_deadbeef",
                     "a_00000000", "_deadbeef", "ünï", "un_", "x/y/z", String(repeating: "x", count: 48),
                     String(repeating: "x", count: 49), String(repeating: "x", count: 200), String(repeating: "x", count: 201)]
        texts += texts.map(HomeAssistantDiscovery.objectID)
        texts += texts.map(HomeAssistantDiscovery.objectID)
        let distinct = Array(Set(texts))
        var owner: [String: String] = [:]
        for text in distinct {
            let id = HomeAssistantDiscovery.objectID(text)
            #expect(Self.isObjectID(id), "\(text) -> \(id)")
            #expect(id == HomeAssistantDiscovery.objectID(text))
            if let other = owner[id] { Issue.record("\(other) and \(text) both map to \(id)") }
            owner[id] = text
        }
    }
}
