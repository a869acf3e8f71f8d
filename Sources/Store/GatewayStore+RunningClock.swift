/// How long the gateway has been running, carried across restarts, and when each device last
/// reported on that clock: `gateway.forgetAfter` counts running time, so neither a wall-clock
/// jump nor a month switched off forgets a device (docs/limits.md).
extension GatewayStore {
    /// Migration step 7: the running clock and each device's last report on it.
    static let runningClockMigration = SQLiteMigration(version: 7, summary: "running clock carried across restarts", sql: """
        CREATE TABLE running_clock (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            seconds REAL NOT NULL
        );
        CREATE TABLE device_running (
            device TEXT PRIMARY KEY NOT NULL,
            last_report REAL NOT NULL
        ) WITHOUT ROWID;
        """)

    /// The running seconds saved last (0 for a new database), and each device's last report
    /// on that clock, as saved at the last graceful stop.
    public func runningClock() throws -> (seconds: Double, lastReports: [String: Double]) {
        let connection = try openConnection()
        let seconds = try connection.query("SELECT seconds FROM running_clock WHERE id = 1") { $0.double(0) }.first ?? 0
        var reports: [String: Double] = [:]
        try connection.forEachRow("SELECT device, last_report FROM device_running") { reports[$0.string(0)] = $0.double(1) }
        return (seconds, reports)
    }

    /// Saves the running seconds and, when given, every device's last report (replacing the
    /// saved ones: a device not listed was forgotten).
    public func saveRunningClock(seconds: Double, lastReports: [String: Double]? = nil) throws {
        let connection = try openConnection()
        try connection.transaction {
            _ = try connection.run("INSERT OR REPLACE INTO running_clock (id, seconds) VALUES (1, ?)", [.real(seconds)])
            guard let lastReports else { return }
            _ = try connection.run("DELETE FROM device_running")
            for (device, last) in lastReports {
                _ = try connection.run("INSERT INTO device_running (device, last_report) VALUES (?, ?)", [.text(device), .real(last)])
            }
        }
    }
}
