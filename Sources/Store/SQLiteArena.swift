/// Memory for the bytes of one statement's bound text and blobs (``SQLiteParameters``), in
/// blocks that never move once handed out, reused from the start by ``reset()``.
final class SQLiteArena {
    static let blockSize = 64 * 1024

    private var blocks: [UnsafeMutableRawPointer] = []
    /// Values larger than a block, freed at the next reset.
    private var large: [UnsafeMutableRawPointer] = []
    private var block = 0
    private var offset = 0

    deinit {
        for pointer in blocks + large { pointer.deallocate() }
    }

    /// A copy of `bytes` that stays valid until the next ``reset()``.
    func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer {
        let count = bytes.count
        let destination: UnsafeMutableRawPointer
        if count > Self.blockSize {
            destination = .allocate(byteCount: count, alignment: 8)
            large.append(destination)
        } else {
            if blocks.isEmpty || offset + count > Self.blockSize {
                if !blocks.isEmpty { block += 1 }
                if block == blocks.count { blocks.append(.allocate(byteCount: Self.blockSize, alignment: 8)) }
                offset = 0
            }
            destination = blocks[block] + offset
            offset += count
        }
        if let base = bytes.baseAddress, count > 0 { destination.copyMemory(from: base, byteCount: count) }
        return UnsafeRawPointer(destination)
    }

    /// Makes every block free for reuse (the statements that pointed into it were reset).
    func reset() {
        for pointer in large { pointer.deallocate() }
        large.removeAll(keepingCapacity: true)
        block = 0
        offset = 0
    }
}
