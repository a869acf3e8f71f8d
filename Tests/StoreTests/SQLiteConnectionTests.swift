import Foundation
import Testing
import TestSupport
import Store

@Suite struct SQLiteConnectionTests {
    static let first = SQLiteMigration(version: 1, summary: "items",
                                       sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);")
    static let second = SQLiteMigration(version: 2, summary: "item colour",
                                        sql: "ALTER TABLE items ADD COLUMN colour TEXT;")

    @Test func opensInWALWithTheRequestedSynchronousMode() throws {
        let directory = try TemporaryDirectory()
        let normal = try SQLiteConnection(path: directory.file("normal.db"))
        #expect(try normal.query("PRAGMA journal_mode") { $0.string(0) } == ["wal"])
        #expect(try normal.scalarInt64("PRAGMA synchronous") == 1)
        #expect(try normal.scalarInt64("PRAGMA temp_store") == 2)  // statement journals in memory
        let full = try SQLiteConnection(path: directory.file("full.db"), options: .init(synchronous: .full))
        #expect(try full.scalarInt64("PRAGMA synchronous") == 2)
    }

    @Test func migratesFromEmptyAndOnlyNewStepsOnReopen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("migrate.db")
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.userVersion() == 0)
            #expect(try connection.migrate([Self.first]) == [1])
            #expect(try connection.userVersion() == 1)
            try connection.run("INSERT INTO items (name) VALUES (?)", ["spade"])
        }
        do {
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.migrate([Self.first]) == [])
            #expect(try connection.migrate([Self.first, Self.second]) == [2])
            #expect(try connection.userVersion() == 2)
            try connection.run("UPDATE items SET colour = 'green'")
            #expect(try connection.query("SELECT name, colour FROM items") { [$0.string(0), $0.string(1)] }
                    == [["spade", "green"]])
        }
        let reopened = try SQLiteConnection(path: path)
        #expect(try reopened.migrate([Self.first, Self.second]) == [])
    }

    @Test func failedMigrationLeavesThePreviousVersion() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("bad.db"))
        try connection.migrate([Self.first])
        let broken = SQLiteMigration(version: 2, summary: "broken", sql: "ALTER TABLE items ADD COLUMN a TEXT; ALTER TABLE nope ADD COLUMN b;")
        let error = try #require(throws: SQLiteError.self) { try connection.migrate([Self.first, broken]) }
        #expect(error.message.contains("no such table: nope"))
        #expect(error.context.contains("migration 2 (broken)"))
        #expect(try connection.userVersion() == 1)
        // The step's first statement was rolled back with it.
        #expect(throws: SQLiteError.self) { try connection.run("SELECT a FROM items") }
    }

    @Test func refusesASchemaNewerThanItsMigrations() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("newer.db"))
        try connection.migrate([Self.first, Self.second])
        let error = try #require(throws: SQLiteError.self) { try connection.migrate([Self.first]) }
        #expect(error.message.contains("version 2, newer than this program's 1"))
    }

    @Test func preparesEachStatementOnce() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("cache.db"))
        try connection.migrate([Self.first])
        let before = connection.preparedStatementCount
        for name in ["a", "b", "c"] {
            try connection.run("INSERT INTO items (name) VALUES (?)", [.text(name)])
        }
        #expect(connection.preparedStatementCount == before + 1)
        #expect(try connection.query("SELECT name FROM items ORDER BY id") { $0.string(0) } == ["a", "b", "c"])
        #expect(try connection.query("SELECT name FROM items ORDER BY id") { $0.string(0) } == ["a", "b", "c"])
        #expect(connection.preparedStatementCount == before + 2)
        #expect(connection.cachedStatementCount >= 2)
    }

    @Test func bindsAndReadsEveryType() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("types.db"))
        try connection.execute("CREATE TABLE v (i, r, t, b, n)")
        let values: [SQLiteValue] = [.integer(.max), .real(-0.125), .text("Désert 🌵\u{0}end"), .blob([0, 1, 255]), .null]
        try connection.run("INSERT INTO v VALUES (?, ?, ?, ?, ?)", values)
        try connection.run("INSERT INTO v VALUES (?, ?, ?, ?, ?)", [.integer(.min), .real(1e300), .text(""), .blob([]), .null])
        let rows = try connection.query("SELECT i, r, t, b, n FROM v ORDER BY rowid") { row in
            (0..<5).map { row.value($0) }
        }
        #expect(rows == [values, [.integer(.min), .real(1e300), .text(""), .blob([]), .null]])
        #expect(try connection.query("SELECT t, b FROM v ORDER BY rowid") { [$0.string(0).count, $0.bytes(1).count] }
                == [[12, 3], [0, 0]])
    }

    @Test func bindsInPlaceAcrossArenaBlocksAndLargeValues() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("parameters.db"))
        try connection.execute("CREATE TABLE v (i, r, t, b, n)")
        // 40 rows of ~5 KB text and blob each (several 64 KB arena blocks), one text and one
        // blob larger than a block, an empty blob; twice, so the second run reuses the blocks.
        func row(_ k: Int) -> [SQLiteValue] {
            let size = k == 7 ? 100_000 : 5_000 + k
            return [.integer(Int64(k)), .real(Double(k) / 8), .text(String(repeating: Character(String(k % 10)), count: size)),
                    .blob(k == 3 ? [] : (0..<size).map { UInt8(truncatingIfNeeded: $0 &* (k + 1)) }), .null]
        }
        let sql = "INSERT INTO v VALUES " + Array(repeating: "(?, ?, ?, ?, ?)", count: 40).joined(separator: ", ")
        for round in 0..<2 {
            let inserted = try connection.run(sql) { parameters in
                for k in (0..<40).map({ $0 + round * 40 }) {
                    for value in row(k) {
                        switch value {
                        case .integer(let i): parameters.integer(i)
                        case .real(let r): parameters.real(r)
                        case .text(let t): parameters.text(t)
                        case .blob(let b): parameters.blob(b)
                        case .null: parameters.null()
                        }
                    }
                }
            }
            #expect(inserted == 40)
        }
        let rows = try connection.query("SELECT i, r, t, b, n FROM v ORDER BY rowid") { row in (0..<5).map { row.value($0) } }
        #expect(rows == (0..<80).map(row))
        #expect(try connection.query("SELECT typeof(b) FROM v WHERE i = 3") { $0.string(0) } == ["blob"])

        let short = try #require(throws: SQLiteError.self) {
            try connection.run("INSERT INTO v VALUES (?, ?, ?, ?, ?)") { $0.integer(1) }
        }
        #expect(short.message.contains("1 values bound, the statement has 5 parameters"))
        let long = try #require(throws: SQLiteError.self) {
            try connection.run("SELECT ?") { parameters in
                parameters.integer(1)
                parameters.integer(2)
            }
        }
        #expect(long.primaryCode == 25)  // SQLITE_RANGE from the second bind
        #expect(long.context == "bind parameter 2 of SELECT ?")
        #expect(try connection.scalarInt64("SELECT count(*) FROM v") == 80)

        // Empty values first in a statement, before the arena handed out any space.
        try connection.run("INSERT INTO v (i, b, t) VALUES (?, ?, ?)") { parameters in
            parameters.integer(100)
            parameters.blob([])
            parameters.text("")
        }
        #expect(try connection.query("SELECT typeof(b) || ' ' || length(b) || ' ' || typeof(t) || ' ' || length(t) FROM v WHERE i = 100") {
            $0.string(0)
        } == ["blob 0 text 0"])
    }

    @Test func errorsCarryTheCodeMessageAndSQL() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("errors.db"))
        try connection.migrate([Self.first])
        let missing = try #require(throws: SQLiteError.self) { try connection.run("SELECT * FROM missing") }
        #expect(missing.primaryCode == 1)
        #expect(missing.message == "no such table: missing")
        #expect(missing.context == "SELECT * FROM missing")

        try connection.run("INSERT INTO items (name) VALUES (?)", ["x"])
        let duplicate = try #require(throws: SQLiteError.self) {
            try connection.run("INSERT INTO items (name) VALUES (?)", ["x"])
        }
        #expect(duplicate.isConstraint)
        #expect(duplicate.code == 2067)  // SQLITE_CONSTRAINT_UNIQUE: extended codes are on
        #expect(duplicate.description.contains("UNIQUE constraint failed: items.name"))

        let count = try #require(throws: SQLiteError.self) { try connection.run("SELECT ?", []) }
        #expect(count.message.contains("1 parameters"))
        // The statement cache stays usable after errors.
        #expect(try connection.scalarInt64("SELECT count(*) FROM items") == 1)
    }

    @Test func transactionRollsBackWhenItsBodyThrows() throws {
        let directory = try TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("rollback.db"))
        try connection.migrate([Self.first])
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try connection.transaction {
                try connection.run("INSERT INTO items (name) VALUES ('kept?')")
                throw Abandon()
            }
        }
        #expect(!connection.isInTransaction)
        #expect(throws: SQLiteError.self) {
            try connection.transaction {
                try connection.run("INSERT INTO items (name) VALUES ('twice')")
                try connection.run("INSERT INTO items (name) VALUES ('twice')")
            }
        }
        #expect(try connection.scalarInt64("SELECT count(*) FROM items") == 0)
        try connection.transaction { try connection.run("INSERT INTO items (name) VALUES ('committed')") }
        #expect(try connection.scalarInt64("SELECT count(*) FROM items") == 1)
    }

    @Test func openingAMissingFileReadOnlyFailsNamingIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("absent.db")
        let error = try #require(throws: SQLiteError.self) {
            try SQLiteConnection(path: path, options: .init(readOnly: true))
        }
        #expect(error.primaryCode == 14)  // SQLITE_CANTOPEN
        #expect(error.context.contains(path))
    }
}
