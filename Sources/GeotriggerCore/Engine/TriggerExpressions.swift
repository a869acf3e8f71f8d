/// A trigger's Arcade expressions (`where`, `filter`, `message`), compiled once per snapshot.
/// PLACEHOLDER until the Arcade interpreter is merged: `where` keeps every fence, no filter, no message.
struct TriggerExpressions: Sendable {
    init(settings: TriggerSettings, trigger: Trigger, layer: FenceLayer) throws(TriggerError) {}

    var hasFilter: Bool { false }

    /// True if `where` keeps `fence` (no `where`: every fence).
    func keeps(_ fence: Fence, settings: TriggerSettings) throws(TriggerError) -> Bool { true }

    /// True if `filter` accepts `update` (no filter: every update).
    func accepts(_ update: LocationUpdate) -> Bool { true }

    /// The message of a notification, or nil without a `message` expression.
    func message(fence: Fence, update: LocationUpdate, notification: NotificationType) -> NotificationMessage? { nil }
}
