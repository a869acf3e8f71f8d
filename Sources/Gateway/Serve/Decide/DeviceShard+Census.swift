import Synchronization

extension DeviceShard {
    /// The devices of all shards together, against `input.maxDevices`, and per broker user
    /// against `input.maxDevicesPerUser`: the shared numbers ``ShardAdmission`` decides from.
    final class Census: Sendable {
        let admission: ShardAdmission
        /// Devices of all shards together. A new device is counted here when it is admitted,
        /// under ``refusing``'s lock (so two admitters never both take the last room); a
        /// shard's other changes (hibernation, forgetting, restoring) through ``DeviceShard``'s
        /// recount, outside it.
        let total = Atomic<Int>(0)
        /// New devices are being refused (the warning is up). The flag, the decision that
        /// moves it and the warning it raises or clears change together under this lock, so
        /// the warning always says what the flag says, whichever admitter comes last.
        private let refusingState = LeveledMutex<Bool>(false, level: .censusAdmission)
        /// The flag as last moved, for readers that take no lock (tests); written only under
        /// ``refusingState``'s lock, right after the flag itself.
        let refusing = Atomic<Bool>(false)
        /// Devices per user, and each counted device's user. Taken only for a device new to
        /// this run and when a device is forgotten, inside a shard's lock (never the other way).
        private let users = LeveledMutex<ShardAdmission.Users>(ShardAdmission.Users(), level: .census)
        /// Where the `too-many-devices` warning goes (nil: only the flag moves, for tests).
        let warnings: Warnings?

        init(limit: Int, perUser: Int = .max, warnings: Warnings? = nil) {
            self.admission = ShardAdmission(limit: limit, perUserLimit: perUser)
            self.warnings = warnings
        }

        /// Decides about a device new to this run of the feed's `userLevel`, counts it in
        /// ``total`` when it is admitted (the shard's recount does not count it again), and moves
        /// the "refusing" flag as the decision says, raising or clearing the `too-many-devices`
        /// warning with it. `raisesWarning`/`clearsWarning`: this call moved the flag. One
        /// admitter at a time: the total read and the device counted are one step, so
        /// `input.maxDevices` is never passed, whatever the shards do at once.
        func admit(_ device: String, userLevel: Int) -> (decision: ShardAdmission.Decision, raisesWarning: Bool, clearsWarning: Bool) {
            refusingState.withLock { refusing in
                let decision = admission.decide(
                    total: total.load(ordering: .relaxed), refusing: refusing, user: ShardAdmission.user(of: device, level: userLevel)
                ) { user in
                    users.withLock { $0.admit(device, user: user, limit: admission.perUserLimit) }
                }
                if decision.admitted { total.add(1, ordering: .relaxed) }
                switch decision.limitWarning {
                case .unchanged:
                    return (decision, false, false)
                case .raise:
                    guard !refusing else { return (decision, false, false) }
                    refusing = true
                    self.refusing.store(true, ordering: .relaxed)
                    warnings?.set(ShardAdmission.limitWarning, admission.limitWarningText)
                    return (decision, true, false)
                case .clear:
                    guard refusing else { return (decision, false, false) }
                    refusing = false
                    self.refusing.store(false, ordering: .relaxed)
                    warnings?.clear(ShardAdmission.limitWarning, resolved: "devices are under input.maxDevices again")
                    return (decision, false, true)
                }
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
