import MQTT
import GPSD
import Store

/// `geotrigger version`: the product and library versions.
enum VersionCommand: Subcommand {
    static let name = "version"
    static let summary = "print the version and the C libraries in use"
    static let help = """
        Usage: geotrigger version

        Prints the geotrigger version and the versions of libmosquitto, libgps and SQLite it uses.
        """

    static func run(_ arguments: [String]) async throws -> Int32 {
        _ = try Arguments(arguments, valued: ["config"], flags: [])
        print("geotrigger \(GatewayVersion.current)")
        print("libmosquitto \(MosquittoLibrary.version), libgps API \(GPSDLibrary.apiVersion), SQLite \(SQLiteLibrary.version)")
        return ExitStatus.ok
    }
}

/// The product version published in the status topic.
public enum GatewayVersion {
    public static let current = "0.1.0"
}
