import GeotriggerCore
import MQTT

#if canImport(Glibc)
import Glibc
#endif

/// `geotrigger watch`: a terminal dispatch console over the event, state and status topics.
enum WatchCommand: Subcommand {
    static let name = "watch"
    static let summary = "a terminal dispatch console: devices, the fences they are in, events"
    static let help = """
        Usage: geotrigger watch [--config FILE] [--broker HOST:PORT] [--prefix P]
                                [--events N] [--timeout S] [--plain]

        Subscribes to PREFIX/events/#, PREFIX/devices/# (the .../state topics), PREFIX/status/+ and
        PREFIX/occupancy/# and shows a table of devices with the fences they are in (from the
        retained device states), the devices in each fence (with output.occupancy), the
        gateways' status, and a scrolling log of events with their messages.
        On a terminal the screen is redrawn in place; when the output is piped (or with
        --plain) it prints one line per change:

          event    12:03:07  enter dispatch/v17  Depot (fleet/depot)  "Vehicle at Depot"
          inside   dispatch/v17: Depot
          occupied Depot (fleet/fleet/depot): 3 devices
          gateway  gw-1: started · 3 devices · 12 events

        Options:
          --config FILE       broker settings and output.prefix from this config
          --broker HOST:PORT  the broker (default from the config, else 127.0.0.1:1883)
          --prefix P          the topic prefix (default output.prefix, geotriggers)
          --events N          exit after N events
          --timeout S         exit after S seconds
          --plain             one line per change even on a terminal
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, valued: ["config", "broker", "prefix", "events", "timeout"], flags: ["plain"])
        let options = try ClientOptions(args, role: "watch")
        let prefix = args["prefix"] ?? options.config.output.prefix
        let maxEvents = try args.integer("events", range: 0...Int(Int32.max))
        let timeout = try args.number("timeout")
        if let timeout, !(0...31_536_000).contains(timeout) {
            throw UsageError("--timeout expects seconds from 0 to 31536000 (a year), got \(timeout)")
        }
        let tty = isatty(1) == 1 && !args.has("plain")

        let client = try MQTTClient(options.mqtt)
        try client.subscribe("\(prefix)/events/#")
        try client.subscribe("\(prefix)/devices/#")  // device ids may span levels; take .../state
        try client.subscribe("\(prefix)/status/+")
        try client.subscribe("\(prefix)/occupancy/#")
        try client.start()
        defer { client.stop() }

        if let timeout {
            Task {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                client.stop()
            }
        }
        var console = WatchConsole(prefix: prefix)
        var events = 0
        var width = 100
        var size = winsize()
        if tty, ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 20 { width = Int(size.ws_col) }
        for await message in client.messages {
            let line = console.take(topic: message.topic, payload: message.payload)
            if tty {
                print("\u{1B}[H\u{1B}[2J" + console.screen(width: width), terminator: "")
            } else if let line {
                print(line)
            }
            fflush(nil)
            if message.topic.hasPrefix("\(prefix)/events/") {
                events += 1
                if let maxEvents, events >= maxEvents { break }
            }
        }
        return ExitStatus.ok
    }
}
