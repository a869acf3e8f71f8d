import Testing
import Store

@Suite struct SQLiteLibraryTests {
    @Test func linksSQLite3() {
        #expect(SQLiteLibrary.version.hasPrefix("3."))
    }
}
