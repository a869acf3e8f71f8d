/// Memory for the bytes of one statement's bound text and blobs (``SQLiteParameters``), in
/// blocks that never move once handed out, reused from the start by ``reset()``.
///
/// The arena only hands out blocks; ``SQLiteParameters`` fills the current one through its
/// own pointer, so copying a value touches no shared state (a class property accessed per
/// value costs a dynamic exclusivity check).
final class SQLiteArena {
    static let blockSize = 64 * 1024

    private var blocks: [UnsafeMutableRawPointer] = []
    /// Values larger than a block, freed at the next reset.
    private var large: [UnsafeMutableRawPointer] = []
    /// Blocks handed out since the last reset.
    private var used = 0

    deinit {
        for pointer in blocks + large { pointer.deallocate() }
    }

    /// Space for at least `count` bytes that stays valid until the next ``reset()``: the next
    /// block, or an allocation of its own for a value larger than a block.
    func space(for count: Int) -> UnsafeMutableRawBufferPointer {
        if count > Self.blockSize {
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 8)
            large.append(pointer)
            return UnsafeMutableRawBufferPointer(start: pointer, count: count)
        }
        if used == blocks.count { blocks.append(.allocate(byteCount: Self.blockSize, alignment: 8)) }
        used += 1
        return UnsafeMutableRawBufferPointer(start: blocks[used - 1], count: Self.blockSize)
    }

    /// Makes every block free for reuse (the statements that pointed into it were reset).
    func reset() {
        for pointer in large { pointer.deallocate() }
        large.removeAll(keepingCapacity: true)
        used = 0
    }
}
