import GeotriggerCore

/// The bytes-per-fence table that `bench index`, `bench engine` and `bench load` print after
/// a build: the parts ``FenceMemory`` counts from the structures (its doc says how each is
/// counted) against the resident growth measured around the build.
enum MemoryBreakdown {
    /// The table for `memory` (counted after the build), `growth` (VmRSS after the build less
    /// before it) and `trimmedGrowth` (the same after malloc_trim gave freed heap back).
    static func table(_ memory: FenceMemory, growth: Int, trimmedGrowth: Int) -> String {
        let n = Swift.max(1, memory.fences)
        func perFence(_ bytes: Int) -> String { IndexBenchmark.format(Double(bytes) / Double(n), 0) }
        func row(_ label: String, _ bytes: Int) -> String {
            "    " + label.padding(toLength: 60) + perFence(bytes).leftPadded(to: 12) + IndexBenchmark.megabytes(bytes).leftPadded(to: 12)
        }
        let vertices = IndexBenchmark.format(Double(memory.vertices) / Double(n), 1)
        return [
            "  memory per fence (\(IndexBenchmark.grouped(memory.fences)) fences, \(vertices) positions each):",
            "    " + "part".padding(toLength: 60) + "bytes/fence".leftPadded(to: 12) + "total".leftPadded(to: 12),
            row("coordinates as stored (\(perFence(memory.coordinateBytes)) of them lat/lon)", memory.coordinates),
            row("spatial index (FenceIndex, fence-number tables)", memory.index),
            row("prepared: containment (PolygonLocator cells, bands)", memory.containment),
            row("prepared: distance (SegmentGrid chord points, cells)", memory.distance),
            row("prepared: PreparedFence objects (Fence struct inline)", memory.objects),
            "      (an object: " + FenceMemory.preparedFenceLayout.map { "\($0.name) \($0.bytes)" }.joined(separator: ", ") + " bytes)",
            row("ids, names, properties, fence-key table", memory.strings),
            row("snapshot per-fence / per-watch tables", memory.tables),
            row("layer arrays (Fence structs held by the layers)", memory.layers),
            row("accounted", memory.total),
            row("  of it headers, spare capacity, malloc slack (\(IndexBenchmark.format(Double(memory.blocks) / Double(n), 1)) blocks)", memory.overhead),
            row("resident growth around the build (VmRSS)", growth),
            row("resident growth after malloc_trim", trimmedGrowth),
            row("other (growth after malloc_trim - accounted)", trimmedGrowth - memory.total),
        ].joined(separator: "\n")
    }
}

extension String {
    /// Right-aligned in `width` characters.
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
