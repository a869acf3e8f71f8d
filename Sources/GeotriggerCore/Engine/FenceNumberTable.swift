/// The snapshot's prepared fences with their numbers by (layer, fence id): the fences array and
/// an open-addressing table of 4-byte fence numbers beside it.
///
/// A `[FenceKey: Int32]` dictionary keeps both strings of every key in its buckets: 40 bytes a
/// bucket, about 84 bytes per fence at a million fences. Here a slot holds only the fence
/// number; a probe compares the key with that fence's own id and its layer's name (fences are
/// numbered in layer order, so a fence's layer is found from where each layer starts). Slots
/// are at most half full, so a lookup probes about 1.5 slots. Lookups happen when a monitor
/// adopts a snapshot or restores its state, never per location update.
struct FenceNumberTable: Sendable {
    /// Every fence, in number order.
    private(set) var fences: [PreparedFence] = []
    /// Layer names, in the order their fences were appended.
    private(set) var layerNames: [String] = []
    /// `layerStarts[l]` is the number of layer `l`'s first fence.
    private(set) var layerStarts: [Int32] = []
    /// Fence numbers, `empty` where free; the count is a power of two.
    private(set) var slots: [Int32] = []

    static let empty: Int32 = -1

    /// A table with room for `capacity` fences without growing.
    init(capacity: Int) {
        fences.reserveCapacity(capacity)
        slots = [Int32](repeating: FenceNumberTable.empty, count: FenceNumberTable.slotCount(for: capacity))
    }

    /// A table holding the first `layerCount` layers of `previous` with their numbers, with room
    /// for `capacity` fences (a rebuild after runtime fence changes: the file layers before them
    /// are unchanged). The previous slots are taken over when they are the size `capacity` needs
    /// and only a few fences follow those layers there (they are taken out); else the kept
    /// fences are placed again. `previous` had no duplicate key, so none is checked for.
    init(capacity: Int, keepingLayers layerCount: Int, of previous: FenceNumberTable) {
        let kept = layerCount < previous.layerStarts.count ? Int(previous.layerStarts[layerCount]) : previous.fences.count
        let dropped = previous.fences.count - kept
        layerNames = Array(previous.layerNames.prefix(layerCount))
        layerStarts = Array(previous.layerStarts.prefix(layerCount))
        let slotCount = FenceNumberTable.slotCount(for: capacity)
        if slotCount == previous.slots.count, dropped <= kept / 16 {
            var table = previous
            for n in (kept..<previous.fences.count).reversed() { table.removeLastPlaced(Int32(n)) }
            slots = table.slots
        } else {
            slots = [Int32](repeating: FenceNumberTable.empty, count: slotCount)
            var l = 0
            for n in 0..<kept {
                while l + 1 < layerStarts.count, Int(layerStarts[l + 1]) <= n { l += 1 }
                insert(Int32(n), hash: FenceNumberTable.hash(layer: layerNames[l], id: previous.fences[n].fence.id))
            }
        }
        fences.reserveCapacity(capacity)
        fences += previous.fences[..<kept]
    }

    /// The smallest power of two that keeps `count` fences at most half the slots (at least 8).
    static func slotCount(for count: Int) -> Int {
        var n = 8
        while n < 2 * count { n <<= 1 }
        return n
    }

    /// Starts a layer: fences appended from now on belong to `name`.
    mutating func startLayer(_ name: String) {
        layerNames.append(name)
        layerStarts.append(Int32(fences.count))
    }

    /// Appends `fence` with `id` in the current layer; returns its number.
    /// The caller has checked that the key is not already present.
    @discardableResult
    mutating func append(_ fence: PreparedFence, id: String) -> Int32 {
        let number = Int32(fences.count)
        fences.append(fence)
        if 2 * fences.count > slots.count {
            grow()
        } else {
            insert(number, hash: FenceNumberTable.hash(layer: layerNames[layerNames.count - 1], id: id))
        }
        return number
    }

    /// The number of the fence with `key`, if present.
    subscript(_ key: EngineSnapshot.FenceKey) -> Int32? {
        guard !fences.isEmpty else { return nil }
        let mask = slots.count - 1
        var i = FenceNumberTable.hash(layer: key.layer, id: key.id) & mask
        while true {
            let n = slots[i]
            if n == FenceNumberTable.empty { return nil }
            if fences[Int(n)].fence.id == key.id, layerNames[layer(of: Int(n))] == key.layer { return n }
            i = (i + 1) & mask
        }
    }

    /// The layer (index into ``layerNames``) of fence `n`: the last layer starting at or before it.
    func layer(of n: Int) -> Int {
        var low = 0, high = layerStarts.count  // layerStarts[low] <= n < layerStarts[high] (or the end)
        while high - low > 1 {
            let middle = (low + high) >> 1
            if Int(layerStarts[middle]) <= n { low = middle } else { high = middle }
        }
        return low
    }

    /// The numbers of layer `l`'s fences (those appended after its start, up to the next layer's).
    func fences(ofLayer l: Int) -> Range<Int> {
        Int(layerStarts[l])..<(l + 1 < layerStarts.count ? Int(layerStarts[l + 1]) : fences.count)
    }

    private mutating func insert(_ number: Int32, hash: Int) {
        let mask = slots.count - 1
        var i = hash & mask
        while slots[i] != FenceNumberTable.empty { i = (i + 1) & mask }
        slots[i] = number
    }

    /// Takes fence `number` out of the slots (the fences array keeps it). Only for the fence
    /// placed last of those still in the slots: the table is then exactly as before it was
    /// placed (it took the first empty slot of its probe, and no fence placed before it probed
    /// past that slot), so clearing the slot is the whole removal. Fences are placed in number
    /// order (also when the slots grow), so taking numbers out from the highest down is that.
    private mutating func removeLastPlaced(_ number: Int32) {
        let mask = slots.count - 1
        var i = FenceNumberTable.hash(layer: layerNames[layer(of: Int(number))], id: fences[Int(number)].fence.id) & mask
        while slots[i] != number { i = (i + 1) & mask }
        slots[i] = FenceNumberTable.empty
    }

    /// Doubles the slots and places every fence again.
    private mutating func grow() {
        slots = [Int32](repeating: FenceNumberTable.empty, count: FenceNumberTable.slotCount(for: fences.count))
        var l = 0
        for n in fences.indices {
            while l + 1 < layerStarts.count, Int(layerStarts[l + 1]) <= n { l += 1 }
            insert(Int32(n), hash: FenceNumberTable.hash(layer: layerNames[l], id: fences[n].fence.id))
        }
    }

    static func hash(layer: String, id: String) -> Int {
        var hasher = Hasher()
        hasher.combine(layer)
        hasher.combine(id)
        return hasher.finalize()
    }
}
