internal import CSQLite

/// A change to one device's persisted monitor state: the new serialized state, or a deletion.
public struct DeviceStateChange: Sendable, Equatable {
    /// The device id.
    public var device: String
    /// The engine's serialized monitor state, or nil to delete the device's state.
    public var state: [UInt8]?

    public init(device: String, state: [UInt8]?) {
        self.device = device
        self.state = state
    }
}
