/// Why a fence's geometry cannot be used (refused at load, with the fence named by the caller).
public struct GeometryError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
