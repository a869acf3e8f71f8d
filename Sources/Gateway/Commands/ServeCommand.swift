/// `geotrigger serve`: the gateway.
enum ServeCommand: Subcommand {
    static let name = "serve"
    static let summary = "run the gateway: MQTT and gpsd positions in, geofence events out"
    static let help = """
        Usage: geotrigger serve [--config FILE]

        Runs the gateway until SIGTERM or SIGINT: subscribes to the feeds' topics on the broker,
        reads the gateway's own gpsd if a gpsd feed is configured, runs one monitor per device
        against the fences of gateway.fences, commits monitor state and events to the SQLite
        database, and publishes events, retained device states and the retained gateway status
        under output.prefix (default geotriggers).

        While the fences load at start the retained status says starting (from a client of its
        own, CLIENTID-failed, so the gateway's session is untouched), then started.

        One serve per database: it locks DATABASE.lock beside gateway.database first, and a
        second serve on the same database exits 1 naming the first one's PID, before it
        connects to the broker.

        SIGHUP reloads fences and triggers (a broken file keeps the old set and adds a status
        warning); broker settings need a restart.

        Options:
          --config FILE   the JSON5 config file (without one, every key has its default:
                          broker 127.0.0.1:1883, fences ./fences, database ./geotrigger.db)

        Exit status: 0 after a clean shutdown, 1 on a runtime failure, 2 on a config or fence
        error (a retained failedToStart status is published first if the broker is reachable).
        Log level: GEOTRIGGER_LOG_LEVEL=debug|info|notice|warning|error (default info).
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["config"], flags: [])
        guard args.positionals.isEmpty else { throw UsageError("serve takes no arguments besides options") }
        return await GatewayServer.serve(configFile: args["config"])
    }
}
