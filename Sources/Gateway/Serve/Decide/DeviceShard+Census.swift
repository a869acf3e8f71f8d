import Synchronization

extension DeviceShard {
    /// The devices of all shards together, against `input.maxDevices`, and per broker user
    /// against `input.maxDevicesPerUser`: the shared numbers ``ShardAdmission`` decides from.
    final class Census: Sendable {
        let admission: ShardAdmission
        let total = Atomic<Int>(0)
        /// New devices are being refused (the warning is up).
        let refusing = Atomic<Bool>(false)
        /// Devices per user, and each counted device's user. Taken only for a device new to
        /// this run and when a device is forgotten, inside a shard's lock (never the other way).
        private let users = LeveledMutex<ShardAdmission.Users>(ShardAdmission.Users(), level: .census)

        init(limit: Int, perUser: Int = .max) {
            self.admission = ShardAdmission(limit: limit, perUserLimit: perUser)
        }

        /// Decides about a device new to this run of the feed's `userLevel`, and moves the
        /// "refusing" flag as the decision says. `raisesWarning`/`clearsWarning`: this call's
        /// swap of the flag moved it, so the `too-many-devices` warning is set or cleared once
        /// for all shards.
        func admit(_ device: String, userLevel: Int) -> (decision: ShardAdmission.Decision, raisesWarning: Bool, clearsWarning: Bool) {
            let decision = admission.decide(
                total: total.load(ordering: .relaxed), refusing: refusing.load(ordering: .relaxed),
                user: ShardAdmission.user(of: device, level: userLevel)
            ) { user in
                users.withLock { $0.admit(device, user: user, limit: admission.perUserLimit) }
            }
            switch decision.limitWarning {
            case .unchanged: return (decision, false, false)
            case .raise: return (decision, !refusing.exchange(true, ordering: .relaxed), false)
            case .clear: return (decision, false, refusing.exchange(false, ordering: .relaxed))
            }
        }

        /// Counts `device` for `user` whatever the room (a device tracked before).
        func attribute(_ device: String, user: String?) {
            guard let user else { return }
            users.withLock { $0.attribute(device, user: user) }
        }

        /// `device` was forgotten: its user has room for another.
        func release(_ device: String) {
            users.withLock { $0.release(device) }
        }
    }
}
