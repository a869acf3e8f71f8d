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
        leanJournalMigration,
        retentionBySequenceMigration,
        payloadFieldsMigration,
        expectationsMigration,
        runningClockMigration,
        tripsMigration,
        plainSequenceMigration,
        fixTimeWithoutIndexMigration,
        stateFoldMigration,
    ]

    /// Version 3: no index on the journal is written at a random place per event any more.
    /// The unique `id` index and `journal_by_device` put every new event on a random leaf page,
    /// so each commit rewrote about one 4 KB page per event (half of the WAL writes in `bench
    /// store`), and more as the journal grows past the page cache. Duplicates are now found
    /// through (fix_time, id), which grows at its end like the fix times do (a replayed event
    /// repeats both its id and its fix time), and outbox rows name their journal row by `seq`
    /// (a rowid lookup) instead of by id. `events --device` scans.
    static let leanJournalMigration = SQLiteMigration(version: 3, summary: "journal without per-event random indexes", sql: """
        ALTER TABLE outbox_local ADD COLUMN journal_seq INTEGER;
        ALTER TABLE outbox_remote ADD COLUMN journal_seq INTEGER;
        UPDATE outbox_local SET journal_seq = (SELECT seq FROM journal WHERE journal.id = outbox_local.event_id)
            WHERE length(payload) = 0;
        UPDATE outbox_remote SET journal_seq = (SELECT seq FROM journal WHERE journal.id = outbox_remote.event_id)
            WHERE length(payload) = 0;
        CREATE TABLE journal_v3 (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL,
            device TEXT NOT NULL,
            trigger_name TEXT NOT NULL,
            layer TEXT NOT NULL,
            fence TEXT NOT NULL,
            event_type TEXT NOT NULL,
            fix_time REAL NOT NULL,
            emitted_time REAL NOT NULL,
            payload TEXT NOT NULL
        );
        INSERT INTO journal_v3 SELECT seq, id, device, trigger_name, layer, fence, event_type, fix_time, emitted_time, payload
            FROM journal ORDER BY seq;
        -- Sequence numbers keep counting from where the old table's stopped.
        DELETE FROM sqlite_sequence WHERE name = 'journal_v3';
        INSERT INTO sqlite_sequence (name, seq) SELECT 'journal_v3', seq FROM sqlite_sequence WHERE name = 'journal';
        DROP TABLE journal;
        ALTER TABLE journal_v3 RENAME TO journal;
        CREATE UNIQUE INDEX journal_by_fix_time ON journal(fix_time, id);
        CREATE INDEX journal_by_emitted_time ON journal(emitted_time);
        """)

    /// Version 4: no index on the emitted time, the last one every event wrote besides its
    /// (fix_time, id) entry. Retention finds its cut by scanning the journal in commit order
    /// from the oldest row to the first one emitted after the cutoff (emitted times follow
    /// commit order), which reads only the rows it then deletes.
    static let retentionBySequenceMigration = SQLiteMigration(
        version: 4, summary: "retention by commit order, without an emitted-time index",
        sql: "DROP INDEX journal_by_emitted_time;")

    /// Version 5: the journal keeps an event's query fields (device, trigger, layer, fence,
    /// type) only inside its payload, the event JSON, where they always were: five bound texts
    /// and ~50 bytes less per event (15 % of the group commit's instructions in `bench store`).
    /// `events` reads them with `json_extract`.
    ///
    /// And an event's own outbox messages ride on its journal row: `outboxes` marks the
    /// destinations it is queued for (bit 1 local, 2 remote), with its `topic` and `qos`, and
    /// `outbox_stream` holds, per destination, the journal sequence up to which those are
    /// settled (acknowledged, moved to the outbox table after a refusal, or dropped by the cap).
    /// A journaled event no longer writes an outbox row and deletes it on acknowledgement (30 %
    /// of the commit's instructions). The outbox tables keep every other message.
    ///
    /// The journal is rebuilt once, like for version 3; sequences, and so the outbox rows'
    /// links to their journal rows, are kept. Earlier events are in no stream: what their
    /// outbox rows still hold is delivered from there.
    ///
    /// `device_state.state` may be NULL (it never is: a forgotten device's row is deleted), so
    /// that the state upsert, `INSERT OR IGNORE ... ON CONFLICT DO UPDATE`, has no check that
    /// could abort it halfway and SQLite keeps no statement journal for it (22 % of an upsert's
    /// instructions, and the group commit writes hundreds per transaction).
    static let payloadFieldsMigration = SQLiteMigration(
        version: 5, summary: "journal query fields read from the payload; outbox streams on the journal", sql: """
        CREATE TABLE journal_v5 (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL,
            fix_time REAL NOT NULL,
            emitted_time REAL NOT NULL,
            payload TEXT NOT NULL,
            outboxes INTEGER NOT NULL DEFAULT 0,
            topic TEXT,
            qos INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO journal_v5 (seq, id, fix_time, emitted_time, payload)
            SELECT seq, id, fix_time, emitted_time, payload FROM journal ORDER BY seq;
        -- Sequence numbers keep counting from where the old table's stopped.
        DELETE FROM sqlite_sequence WHERE name = 'journal_v5';
        INSERT INTO sqlite_sequence (name, seq) SELECT 'journal_v5', seq FROM sqlite_sequence WHERE name = 'journal';
        DROP TABLE journal;
        ALTER TABLE journal_v5 RENAME TO journal;
        CREATE UNIQUE INDEX journal_by_fix_time ON journal(fix_time, id);
        CREATE TABLE outbox_stream (
            destination TEXT PRIMARY KEY NOT NULL,
            settled INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO outbox_stream (destination, settled) VALUES ('local', 0), ('remote', 0);
        CREATE TABLE device_state_v5 (
            device TEXT PRIMARY KEY NOT NULL,
            state BLOB
        ) WITHOUT ROWID;
        INSERT INTO device_state_v5 SELECT device, state FROM device_state;
        DROP TABLE device_state;
        ALTER TABLE device_state_v5 RENAME TO device_state;
        """)

    /// Version 9: the journal's `seq` is a plain `INTEGER PRIMARY KEY`, without `AUTOINCREMENT`,
    /// whose counter in `sqlite_sequence` was one more page every group commit wrote whatever
    /// its events (docs/performance.md "On the box"). A sequence is still never used twice: the
    /// store numbers new rows itself, from the newest sequence the journal or `journal_start`
    /// holds (``GatewayStore/nextJournalSequence``), and retention never deletes the newest row.
    /// `journal_start` keeps the newest sequence the old table's counter had given, so rows it
    /// numbered and retention deleted before this upgrade are not numbered again.
    ///
    /// The journal is rebuilt once, like for versions 3 and 5; sequences, and so the outbox
    /// rows' links and the streams' settled positions, are kept.
    static let plainSequenceMigration = SQLiteMigration(
        version: 9, summary: "journal sequences without AUTOINCREMENT", sql: """
        CREATE TABLE journal_v9 (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            fix_time REAL NOT NULL,
            emitted_time REAL NOT NULL,
            payload TEXT NOT NULL,
            outboxes INTEGER NOT NULL DEFAULT 0,
            topic TEXT,
            qos INTEGER NOT NULL DEFAULT 0
        );
        INSERT INTO journal_v9 (seq, id, fix_time, emitted_time, payload, outboxes, topic, qos)
            SELECT seq, id, fix_time, emitted_time, payload, outboxes, topic, qos FROM journal ORDER BY seq;
        CREATE TABLE journal_start (seq INTEGER NOT NULL);
        INSERT INTO journal_start (seq)
            SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'journal'), 0),
                       coalesce((SELECT max(seq) FROM journal), 0));
        DROP TABLE journal;
        DELETE FROM sqlite_sequence WHERE name = 'journal';
        ALTER TABLE journal_v9 RENAME TO journal;
        CREATE UNIQUE INDEX journal_by_fix_time ON journal(fix_time, id);
        """)

    /// Version 10: no `(fix_time, id)` index. Its entries went to the leaf of their fix time,
    /// an older one for every event decided late (by silence), so a group commit wrote 2-3 of
    /// its pages whatever its events (docs/performance.md "On the box"). What it served:
    /// - duplicates: only a spill file's events can be journaled already (a monitor's events
    ///   commit with its state); such a batch is checked against the journal's newest rows
    ///   (``StoreBatch/eventsMayRepeat``);
    /// - `events` by fix time: emitted times follow commit order, and an event's fix time is
    ///   at most its emitted time unless the fix came from a clock ahead of the gateway's, so
    ///   the rows from `since` on are found by sequence (``GatewayStore/firstSequence(emittedFrom:on:)``),
    ///   and the few whose fix time is more than ``GatewayStore/fixAhead`` seconds ahead of
    ///   their emitted time in `journal_fix_ahead`, an index no other event writes.
    static let fixTimeWithoutIndexMigration = SQLiteMigration(
        version: 10, summary: "journal without the (fix_time, id) index", sql: """
        DROP INDEX journal_by_fix_time;
        CREATE INDEX journal_fix_ahead ON journal(fix_time) WHERE fix_time > emitted_time + 60;
        """)

    /// Version 11: a step whose decisions its journaled events tell writes no `device_state`
    /// row (a row was a page written per deciding device per commit); the journal's events
    /// are folded into the rows later (``GatewayStore/foldJournal(batch:transactions:)``). Each row keeps the
    /// newest journal sequence given before it was written, and `state_fold` the sequence up
    /// to which the journal is folded: every row written so far is up to date.
    static let stateFoldMigration = SQLiteMigration(
        version: 11, summary: "device states folded from the journal", sql: """
        ALTER TABLE device_state ADD COLUMN journal_seq INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE state_fold (seq INTEGER NOT NULL);
        INSERT INTO state_fold (seq)
            SELECT max(coalesce((SELECT max(seq) FROM journal), 0), coalesce((SELECT max(seq) FROM journal_start), 0));
        """)

    /// Migrations that rebuild the journal or drop its index, leaving the old pages free: the
    /// first start after one of them compacts the file once (VACUUM). (Left free, they would be
    /// reused one by one by the journal's new pages, each taken from the free list's trunk
    /// page: one more page written by every commit until they are used up.)
    static let journalRebuilds: Set<Int> = [leanJournalMigration.version, payloadFieldsMigration.version,
                                            plainSequenceMigration.version, fixTimeWithoutIndexMigration.version]

    /// The schema version this program writes and reads.
    public static var schemaVersion: Int { migrations.count }
}
