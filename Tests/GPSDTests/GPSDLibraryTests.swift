import Testing
import GPSD

@Suite struct GPSDLibraryTests {
    @Test func linksLibgpsAPI() {
        #expect(Int(GPSDLibrary.apiVersion.split(separator: ".")[0])! >= 11)
    }
}
