import Testing
import MQTT

@Suite struct MosquittoLibraryTests {
    @Test func linksLibmosquitto2() {
        #expect(MosquittoLibrary.version.hasPrefix("2."))
    }
}
