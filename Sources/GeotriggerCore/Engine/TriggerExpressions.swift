/// A watch's Arcade expressions (`where`, `filter`, `message`), compiled once per snapshot.
struct TriggerExpressions: Sendable {
    var whereClause: ArcadeExpression?
    var filter: ArcadeExpression?
    var message: ArcadeExpression?

    var hasFilter: Bool { filter != nil }

    /// True if `where` keeps `fence` (no `where`: every fence).
    func keeps(_ fence: Fence) throws(ArcadeError) -> Bool {
        guard let whereClause else { return true }
        return try whereClause.evaluateCondition(ArcadeContext(fenceFeature: .fenceFeature(fence)))
    }

    /// True if `filter` accepts `update` (no filter: every update). An evaluation error rejects
    /// the update (it then changes no state, like any filtered update).
    func accepts(_ update: LocationUpdate) -> Bool {
        guard let filter else { return true }
        do {
            return try filter.evaluateCondition(ArcadeContext(locationUpdate: update))
        } catch {
            return false
        }
    }

    /// The message of a notification (nil without a `message` expression), or the evaluation error.
    func message(fence: Fence, update: LocationUpdate, notification: NotificationType) -> (ArcadeMessage?, String?) {
        guard let message else { return (nil, nil) }
        let context = ArcadeContext(
            fenceFeature: .fenceFeature(fence), update: update, notificationType: notification.notificationName)
        do {
            return (try ArcadeMessage(message, context), nil)
        } catch {
            return (nil, "message: \(error.description)")
        }
    }

    /// The profile variables each key may read.
    static let allowedVariables: [String: Set<String>] = [
        "where": ["fencefeature"],
        "filter": ["locationupdate"],
        "message": ["fencefeature", "feedfeature", "fencenotificationtype", "locationupdate"],
    ]
}
