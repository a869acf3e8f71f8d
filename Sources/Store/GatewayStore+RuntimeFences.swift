/// Runtime fences (published by dispatchers over MQTT) kept so that a gateway starts with them
/// even when the broker cannot be reached. The broker's retained messages stay the source of
/// truth once connected; this table follows every change the gateway applies.
extension GatewayStore {
    /// Migration step 2: one row per runtime fence, the Feature's JSON text as published.
    static let runtimeFencesMigration = SQLiteMigration(version: 2, summary: "runtime fences published over MQTT", sql: """
        CREATE TABLE runtime_fence (
            layer TEXT NOT NULL,
            fence TEXT NOT NULL,
            feature BLOB NOT NULL,
            PRIMARY KEY (layer, fence)
        ) WITHOUT ROWID;
        """)

    /// One stored runtime fence: its layer, id and the Feature's bytes.
    public struct RuntimeFenceRow: Sendable, Equatable {
        public var layer: String
        public var fence: String
        public var feature: [UInt8]

        public init(layer: String, fence: String, feature: [UInt8]) {
            self.layer = layer
            self.fence = fence
            self.feature = feature
        }
    }

    /// Every stored runtime fence, by layer then fence id.
    public func runtimeFences() throws -> [RuntimeFenceRow] {
        try openConnection().query("SELECT layer, fence, feature FROM runtime_fence ORDER BY layer, fence") {
            RuntimeFenceRow(layer: $0.string(0), fence: $0.string(1), feature: $0.bytes(2))
        }
    }

    /// One stored runtime fence's key and the size of its Feature, read without its bytes.
    public struct RuntimeFenceSize: Sendable, Equatable {
        public var layer: String
        public var fence: String
        /// The Feature's length in bytes.
        public var bytes: Int

        public init(layer: String, fence: String, bytes: Int) {
            self.layer = layer
            self.fence = fence
            self.bytes = bytes
        }
    }

    /// The key and size of every stored runtime fence, by layer then fence id. SQLite reads the
    /// length of a BLOB without reading the BLOB, so a start learns what fits its budget without
    /// loading any payload.
    public func runtimeFenceSizes() throws -> [RuntimeFenceSize] {
        try openConnection().query("SELECT layer, fence, length(feature) FROM runtime_fence ORDER BY layer, fence") {
            RuntimeFenceSize(layer: $0.string(0), fence: $0.string(1), bytes: $0.int(2))
        }
    }

    /// The stored Feature of one runtime fence (nil: none).
    public func runtimeFence(layer: String, fence: String) throws -> [UInt8]? {
        var feature: [UInt8]?
        try openConnection().forEachRow(
            "SELECT feature FROM runtime_fence WHERE layer = ? AND fence = ?", [.text(layer), .text(fence)]
        ) { feature = $0.bytes(0) }
        return feature
    }

    /// Stores the changes in one transaction: a row with a feature replaces the fence, a nil
    /// feature deletes it.
    public func saveRuntimeFences(_ changes: [(layer: String, fence: String, feature: [UInt8]?)]) throws {
        let connection = try openConnection()
        try connection.transaction {
            for change in changes {
                if let feature = change.feature {
                    _ = try connection.run(
                        "INSERT OR REPLACE INTO runtime_fence (layer, fence, feature) VALUES (?, ?, ?)",
                        [.text(change.layer), .text(change.fence), .blob(feature)])
                } else {
                    _ = try connection.run(
                        "DELETE FROM runtime_fence WHERE layer = ? AND fence = ?", [.text(change.layer), .text(change.fence)])
                }
            }
        }
    }
}
