import FoundationEssentials
import MQTT

/// The broker options of the client commands (`watch`, `simulate`): `--config FILE` for the
/// broker settings and prefix, `--broker HOST:PORT` to override the address.
struct ClientOptions {
    let config: GatewayConfig
    let mqtt: MQTTConfiguration

    /// Reads `--config` and `--broker`; the client gets its own id (`geotrigger-ROLE-PID`) and a
    /// clean session, so it never disturbs the gateway's.
    init(_ args: Arguments, role: String) throws {
        var config = GatewayConfig()
        if let file = args["config"] {
            do { config = try GatewayConfig.load(file: file) } catch { throw UsageError(error.description) }
        }
        var mqtt = try BrokerConnection.configuration(config, remote: false, will: nil)
        if let broker = args["broker"] {
            guard let colon = broker.lastIndex(of: ":"), let port = Int(broker[broker.index(after: colon)...]) else {
                throw UsageError("--broker expects HOST:PORT, got '\(broker)'")
            }
            mqtt.host = String(broker[..<colon])
            mqtt.port = port
        }
        mqtt.clientId = "geotrigger-\(role)-\(ProcessInfo.processInfo.processIdentifier)"
        mqtt.cleanStart = true
        self.config = config
        self.mqtt = mqtt
    }
}
