internal import CSQLite

extension GatewayStore {
    /// The schema, one step per version (`PRAGMA user_version`). Append steps; never edit one
    /// that has shipped.
    static let migrations: [SQLiteMigration] = [
        SQLiteMigration(version: 1, summary: "monitor state, event journal, local and remote outboxes", sql: """
            CREATE TABLE device_state (
                device TEXT PRIMARY KEY NOT NULL,
                state BLOB NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE journal (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                device TEXT NOT NULL,
                trigger_name TEXT NOT NULL,
                layer TEXT NOT NULL,
                fence TEXT NOT NULL,
                event_type TEXT NOT NULL,
                fix_time REAL NOT NULL,
                emitted_time REAL NOT NULL,
                payload TEXT NOT NULL
            );
            CREATE INDEX journal_by_device ON journal(device, seq);
            CREATE INDEX journal_by_fix_time ON journal(fix_time);
            CREATE INDEX journal_by_emitted_time ON journal(emitted_time);
            CREATE TABLE outbox_local (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                event_id TEXT NOT NULL,
                topic TEXT NOT NULL,
                payload BLOB NOT NULL,
                qos INTEGER NOT NULL
            );
            CREATE TABLE outbox_remote (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                event_id TEXT NOT NULL,
                topic TEXT NOT NULL,
                payload BLOB NOT NULL,
                qos INTEGER NOT NULL
            );
            """),
        runtimeFencesMigration,
    ]

    /// The schema version this program writes and reads.
    public static var schemaVersion: Int { migrations.count }
}
