import Foundation

/// A throw-away CA with a server certificate (for 127.0.0.1 and localhost) and a client
/// certificate signed by it, made with the `openssl` command (P-256 keys, valid 2 days).
public struct TestCertificates: Sendable {
    /// The CA certificate (PEM): give it to clients and to mosquitto's `cafile`.
    public let ca: String
    /// The server certificate and key for mosquitto's `certfile` / `keyfile`.
    public let serverCertificate: String
    public let serverKey: String
    /// A client certificate (CN `clientCommonName`) and key.
    public let clientCertificate: String
    public let clientKey: String
    /// The client certificate's common name.
    public let clientCommonName: String

    /// Writes a new CA, server and client certificate into `directory`.
    public static func make(
        in directory: TemporaryDirectory, clientCommonName: String = "geotrigger-test-client",
        openssl: String = "/usr/bin/openssl"
    ) throws -> TestCertificates {
        let dir = directory.path
        let ext = try directory.write(
            "server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        let clientExt = try directory.write("client.ext", "extendedKeyUsage=clientAuth\n")
        func key(_ name: String) throws {
            try ExternalProgram.run(
                openssl, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "\(dir)/\(name)"])
        }
        try key("ca.key")
        try ExternalProgram.run(
            openssl,
            ["req", "-x509", "-new", "-key", "\(dir)/ca.key", "-out", "\(dir)/ca.crt", "-days", "2",
             "-subj", "/CN=geotrigger test CA"])
        func signed(_ name: String, subject: String, extensions: String) throws {
            try key("\(name).key")
            try ExternalProgram.run(
                openssl,
                ["req", "-new", "-key", "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr", "-subj", subject])
            try ExternalProgram.run(
                openssl,
                ["x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/ca.crt", "-CAkey", "\(dir)/ca.key",
                 "-CAcreateserial", "-out", "\(dir)/\(name).crt", "-days", "2", "-extfile", extensions])
        }
        try signed("server", subject: "/CN=localhost", extensions: ext)
        try signed("client", subject: "/CN=\(clientCommonName)", extensions: clientExt)
        return TestCertificates(
            ca: "\(dir)/ca.crt", serverCertificate: "\(dir)/server.crt", serverKey: "\(dir)/server.key",
            clientCertificate: "\(dir)/client.crt", clientKey: "\(dir)/client.key",
            clientCommonName: clientCommonName)
    }
}
