import GeotriggerCore

/// What a device's step publishes once it is committed: its retained state and what follows
/// from it (occupancy, Home Assistant attributes). ``StatePublisher/publish(_:)`` takes it.
struct DevicePublication: Sendable {
    var device: String
    /// The state payload; nil: the device was forgotten (its retained topics are cleared).
    var state: [UInt8]?
    /// Its confirmed stays, for occupancy (empty when forgotten, or without `output.occupancy`).
    var stays: [DeviceMonitor.Stay] = []
    /// The Home Assistant attributes payload (with `homeassistant.discovery`).
    var attributes: [UInt8]?

    /// A forgotten device: every retained topic of it is cleared.
    static func forgotten(_ device: String) -> DevicePublication {
        DevicePublication(device: device, state: nil)
    }
}

extension ServeContext {
    /// The publication of `monitor`'s current state, stamped `updated`.
    func publication(of monitor: DeviceMonitor, updated: Double) -> DevicePublication {
        let state = monitor.stateJSON(updated: updated)
        return DevicePublication(
            device: monitor.device, state: payloadBytes(state),
            stays: config.output.occupancy ? monitor.stays : [],
            attributes: statePublisher.discovery.map { payloadBytes($0.attributes(ofState: state)) })
    }
}
