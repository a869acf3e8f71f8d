import Synchronization

extension DeviceShard {
    /// The devices of all shards together, against `input.maxDevices`, and per broker user
    /// against `input.maxDevicesPerUser`.
    final class Census: Sendable {
        let limit: Int
        let total = Atomic<Int>(0)
        /// New devices are being refused (the warning is up).
        let refusing = Atomic<Bool>(false)
        let perUserLimit: Int
        /// Devices per user, and each counted device's user. Taken only for a device new to
        /// this run and when a device is forgotten, inside a shard's lock (never the other way).
        private let users = LeveledMutex<(count: [String: Int], of: [String: String])>(([:], [:]), level: .census)

        init(limit: Int, perUser: Int = .max) {
            self.limit = limit
            self.perUserLimit = perUser
        }

        /// The user a device id names: its `level`-th level (1-based; the feed's
        /// `userLevel`, whose wildcards are the id's levels); nil for level 0 (none).
        static func user(of device: String, level: Int) -> String? {
            guard level > 0 else { return nil }
            var remaining = level
            for part in device.split(separator: "/", omittingEmptySubsequences: false) {
                remaining -= 1
                if remaining == 0 { return String(part) }
            }
            return nil
        }

        /// Counts `device` for `user` if the user has room (or counted it already).
        func admit(_ device: String, user: String) -> Bool {
            users.withLock { users in
                if users.of[device] != nil { return true }
                guard users.count[user, default: 0] < perUserLimit else { return false }
                users.count[user, default: 0] += 1
                users.of[device] = user
                return true
            }
        }

        /// Counts `device` for `user` whatever the room (a device tracked before).
        func attribute(_ device: String, user: String?) {
            guard let user else { return }
            users.withLock { users in
                guard users.of[device] == nil else { return }
                users.count[user, default: 0] += 1
                users.of[device] = user
            }
        }

        /// `device` was forgotten: its user has room for another.
        func release(_ device: String) {
            users.withLock { users in
                guard let user = users.of.removeValue(forKey: device) else { return }
                let left = users.count[user, default: 1] - 1
                users.count[user] = left > 0 ? left : nil
            }
        }
    }
}
