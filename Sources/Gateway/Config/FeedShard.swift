import GeotriggerCore

/// `feeds[].shard: "K/N"`: the fallback for brokers that cannot pin a device to one gateway.
/// Every gateway subscribes to the whole feed and keeps only the devices whose stable hash
/// falls in shard `index` of `count`; the others are ignored (not counted as drops). Each
/// gateway still receives every update, so it costs broker bandwidth N times over.
public struct FeedShard: Sendable, Equatable, CustomStringConvertible {
    /// K: this gateway's shard, `0..<count`.
    public let index: Int
    /// N: how many gateways share the feed.
    public let count: Int

    /// A shard, or nil unless `count >= 1` and `0 <= index < count`.
    public init?(index: Int, count: Int) {
        guard count >= 1, (0..<count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// Parses `"K/N"` (decimal digits only), or nil.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let index = Int(parts[0]), let count = Int(parts[1])
        else { return nil }
        self.init(index: index, count: count)
    }

    /// The shard of `device` in `count` shards, from the upper half of `StableHash.of(device)`:
    /// the monitor pool picks a gateway's core from the same hash modulo the core count, so
    /// the lower bits would put all of a shard's devices on one core when N and the core count
    /// share a factor.
    public static func shard(of device: String, count: Int) -> Int {
        Int((StableHash.of(device) >> 32) % UInt64(count))
    }

    /// Whether this gateway handles `device`.
    public func contains(_ device: String) -> Bool {
        count == 1 || Self.shard(of: device, count: count) == index
    }

    /// `K/N`.
    public var description: String { "\(index)/\(count)" }
}
