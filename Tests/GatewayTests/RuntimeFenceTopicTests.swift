@testable import Gateway
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
}
