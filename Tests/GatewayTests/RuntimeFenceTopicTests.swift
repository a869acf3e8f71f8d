@testable import Gateway
import GeotriggerCore
import Testing

/// Which topics the control plane takes as runtime fences (`PREFIX/fences/LAYER/FENCE_ID`);
/// every other message goes to the feeds.
@Suite struct RuntimeFenceTopicTests {
    let prefix = Array("geotriggers/fences/".utf8)

    @Test func exactlyALayerAndAFenceIdAfterThePrefix() {
        #expect(RuntimeFences.isFenceTopic("geotriggers/fences/jobs/a", prefix: prefix))
        #expect(RuntimeFences.isFenceTopic("geotriggers/fences/jobs/ünïcode", prefix: prefix))
        // Empty levels are taken, and answered with an error by `take`.
        #expect(RuntimeFences.isFenceTopic("geotriggers/fences//", prefix: prefix))
        #expect(!RuntimeFences.isFenceTopic("geotriggers/fences/jobs", prefix: prefix))
        #expect(!RuntimeFences.isFenceTopic("geotriggers/fences/", prefix: prefix))
        #expect(!RuntimeFences.isFenceTopic("geotriggers/fences/jobs/a/error", prefix: prefix))
        #expect(!RuntimeFences.isFenceTopic("geotriggers/fencesX/jobs/a", prefix: prefix))
        #expect(!RuntimeFences.isFenceTopic("other/fences/jobs/a", prefix: prefix))
        #expect(!RuntimeFences.isFenceTopic("fleet/vehicles/v17/location", prefix: prefix))
    }
    /// A runtime fence's name is at most 256 bytes: a longer one is rejected with the reason
    /// (a dispatcher's 600,000-character name made every event about the fence undeliverable).
    @Test func aRuntimeFenceNameLongerThan256BytesIsRejected() throws {
        func parse(_ name: String) -> Result<GeotriggerCore.Fence, GeotriggerCore.FenceError> {
            RuntimeFences.parse(Array(#"{"type":"Feature","properties":{"name":"\#(name)","buffer":5},"geometry":{"type":"Point","coordinates":[-119.71,34.45]}}"#.utf8),
                                layer: "jobs", id: "a", topic: "geotriggers/fences/jobs/a")
        }
        let fits = String(repeating: "n", count: 256)
        #expect(try parse(fits).get().name == fits)
        guard case .failure(let error) = parse(String(repeating: "n", count: 600_000)) else {
            Issue.record("a 600,000-byte name was taken")
            return
        }
        #expect(error.message.contains("properties.name is 600000 bytes; a runtime fence's name is at most 256 bytes"), "\(error.message)")
    }
}
