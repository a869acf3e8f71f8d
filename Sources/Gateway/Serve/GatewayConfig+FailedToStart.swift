import FoundationEssentials
import GeotriggerCore

extension GatewayConfig {
    /// Where to report `failedToStart` for a config file that does not load: the file decoded
    /// as far as it goes, when its problems leave the broker section, `gateway.id` and
    /// `output.prefix` intact (nil otherwise, or when the file is not readable JSON5: then which
    /// broker and topic to tell is not known).
    static func failedToStartTarget(file path: String) -> GatewayConfig? {
        guard let data = FileManager.default.contents(atPath: path),
            let document = try? JSONReader.parse([UInt8](data), file: path, dialect: .json5)
        else { return nil }
        var decoder = ConfigDecoder()
        var config = GatewayConfig(decoding: document.value, with: &decoder)
        let reportingKeysBroken = decoder.problems.contains { problem in
            switch (problem.path.first, problem.path.dropFirst().first) {
            case (.key("broker")?, _), (nil, _): true
            case (.key("gateway")?, .key("id")?), (.key("gateway")?, nil): true
            case (.key("output")?, .key("prefix")?), (.key("output")?, nil): true
            default: false
            }
        }
        guard !reportingKeysBroken else { return nil }
        config.file = path
        if let slash = path.lastIndex(of: "/") {
            config.folder = slash == path.startIndex ? "/" : String(path[..<slash])
        }
        return config
    }
}
