/// Bytes held by fences, their prepared forms, the index and a snapshot's tables, counted from
/// the actual storage of each structure, by part. Only `geotrigger bench` uses it (its memory
/// breakdown); it reads the structures and changes nothing.
///
/// How the bytes are counted:
/// - A heap block of `n` bytes costs what glibc's malloc takes for it: `n + 8` rounded up to 16,
///   at least 32 (``FenceMemory/block(_:)``).
/// - An array with a buffer: one block of 32 header bytes + `capacity` × the element's stride
///   (capacity, not count: an array grown by appending holds up to twice what it uses). An
///   empty array (the shared empty singleton) costs nothing. A block of 128 KiB or more is
///   fresh pages that are resident only once written, so such an array counts its header and
///   `count` elements, rounded up to 4 KiB pages (its unused capacity is address space only).
/// - A string: nothing when it fits the 15-byte small form inside the value; else one block
///   of 32 header bytes + its UTF-8 bytes + a NUL. A string's storage held by several values
///   (a fence's id in the fence and in the snapshot's key dictionary) is counted once, by its
///   address. (Literals longer than 15 bytes live in the binary and cost no heap; fence data
///   has none.)
/// - A class instance: one block of 16 header bytes + the size of its stored fields.
/// - A dictionary with storage: one block of its ~64 header bytes, a bitmap of one bit per
///   bucket, and `buckets` × (key stride + value stride), buckets being the power of two that
///   keeps it at most 3/4 full for its capacity.
/// - Values stored inline in another (a `Fence` inside its ``PreparedFence``) count in their
///   container; arrays a copy shares (the fence in a layer and in its prepared form, a ring
///   the locator reads in place) count once.
///
/// The parts:
/// - ``coordinates``: the fences' geometry as stored: the `[Polygon]` (or points, lines) array
///   and every ring or line array, plus the rings a ``PolygonLocator`` copied (unwrapped
///   longitudes). ``coordinateBytes`` is the 16 bytes of latitude and longitude per position
///   within them, without headers.
/// - ``index``: the ``FenceIndex`` arrays (boxes, children, ids), and for a snapshot both of
///   its indexes with their fence-number tables.
/// - ``containment``: each ``PolygonLocator``'s ring tables (without the ring arrays, which are
///   ``coordinates``) and, for a fence large enough to have them, its cell states and latitude
///   bands with the object holding them.
/// - ``distance``: each ``SegmentGrid``'s chord points and, for a fence large enough to have
///   them, its cell lists with the object holding them.
/// - ``objects``: each ``PreparedFence`` instance (header and fields, with its `Fence` struct,
///   locator and grid structs inline).
/// - ``strings``: fence ids, layer names and `name`s beyond the small form, the `properties`
///   objects (entry arrays, keys, values), and a snapshot's fence-key table.
/// - ``tables``: a snapshot's per-fence and per-watch tables: the prepared-fence array, watch
///   starts, (watch, buffer) entries, reaches, `follow` devices, and the watch and rule
///   arrays (the triggers' settings and compiled expressions are not counted: a few per
///   trigger, not per fence).
/// - ``layers``: arrays of prepared-fence references held by ``FenceLayer``s besides the
///   snapshot, and of `Fence` structs for a layer built from plain fences (a parser's layer
///   holds each fence only inside its prepared form; the structs' arrays and strings are the
///   snapshot's).
package struct FenceMemory: Sendable {
    package var fences = 0
    package var vertices = 0
    package var coordinates = 0
    package var coordinateBytes = 0
    package var index = 0
    package var containment = 0
    package var distance = 0
    package var objects = 0
    package var strings = 0
    package var tables = 0
    package var layers = 0
    /// Heap blocks counted, and their bytes that are not payload: array, string and object
    /// headers, unused capacity, malloc's rounding and chunk header, empty dictionary buckets.
    package var blocks = 0
    package var overhead = 0
    /// Addresses of string storage already counted.
    private var seenStrings: Set<Int> = []

    package init() {}

    package var total: Int { coordinates + index + containment + distance + objects + strings + tables + layers }

    /// Heap bytes glibc's malloc takes for a request of `n` bytes.
    package static func block(_ n: Int) -> Int { Swift.max(32, (n + 8 + 15) & ~15) }

    /// Heap bytes of `a`'s buffer (0 for the empty singleton).
    package static func array<T>(_ a: [T]) -> Int {
        guard a.capacity > 0 else { return 0 }
        let reserved = 32 + a.capacity * MemoryLayout<T>.stride
        guard reserved >= largeBlock else { return block(reserved) }
        return (32 + a.count * MemoryLayout<T>.stride + 4095) & ~4095
    }

    /// Blocks of this size or more get fresh pages (mmap, or the top of the heap) that become
    /// resident only when written: only the used part of such an array counts.
    static let largeBlock = 128 << 10

    /// ``array(_:)``, its block and overhead tallied.
    package mutating func counted<T>(_ a: [T]) -> Int {
        let bytes = FenceMemory.array(a)
        if bytes > 0 {
            blocks += 1
            overhead += bytes - a.count * MemoryLayout<T>.stride
        }
        return bytes
    }

    mutating func counted(_ c: CompactIndices) -> Int {
        switch c.storage {
        case .narrow(let values): counted(values)
        case .wide(let values): counted(values)
        }
    }

    static func address<T>(_ a: [T]) -> UnsafeRawPointer? {
        a.withUnsafeBufferPointer { $0.baseAddress.map { UnsafeRawPointer($0) } }
    }

    static func indices(_ c: CompactIndices) -> Int {
        switch c.storage {
        case .narrow(let values): array(values)
        case .wide(let values): array(values)
        }
    }

    mutating func counted<K, V>(_ d: [K: V]) -> Int {
        let bytes = FenceMemory.dictionary(d)
        if bytes > 0 {
            blocks += 1
            overhead += bytes - d.count * (MemoryLayout<K>.stride + MemoryLayout<V>.stride)
        }
        return bytes
    }

    static func dictionary<K, V>(_ d: [K: V]) -> Int {
        guard d.capacity > 0 else { return 0 }
        var buckets = 1
        while buckets * 3 / 4 < d.capacity { buckets *= 2 }
        return block(64 + (buckets + 63) / 64 * 8 + buckets * (MemoryLayout<K>.stride + MemoryLayout<V>.stride))
    }

    /// Out-of-line bytes of `s`, once per storage.
    mutating func string(_ s: String) -> Int {
        let count = s.utf8.count
        guard count > 15 else { return 0 }
        var copy = s
        let storage = copy.withUTF8 { $0.baseAddress.map { Int(bitPattern: $0) } }
        if let storage, !seenStrings.insert(storage).inserted { return 0 }
        blocks += 1
        overhead += FenceMemory.block(32 + count + 1) - count
        return FenceMemory.block(32 + count + 1)
    }

    mutating func object(_ o: JSONObject) -> Int {
        var bytes = counted(o.entries)
        for (key, value) in o.entries { bytes += string(key) + self.value(value) }
        return bytes
    }

    mutating func value(_ v: JSONValue) -> Int {
        switch v {
        case .null, .bool, .number: 0
        case .string(let s): string(s)
        case .array(let items): items.reduce(counted(items)) { $0 + value($1) }
        case .object(let o): object(o)
        }
    }

    /// Adds a fence's strings and geometry (when it is not counted in a prepared fence).
    package mutating func add(_ fence: Fence) {
        fences += 1
        strings += string(fence.id) + string(fence.layer) + (fence.name.map { string($0) } ?? 0) + object(fence.storedProperties)
        switch fence.geometry {
        case .polygons(let polygons):
            coordinates += counted(polygons)
            for p in polygons {
                for ring in [p.exterior] + p.holes { addPath(ring) }
                coordinates += counted(p.holes)
            }
        case .points(let points):
            addPath(points)
        case .lines(let lines):
            coordinates += counted(lines)
            for line in lines { addPath(line) }
        }
    }

    private mutating func addPath(_ path: [Coordinate]) {
        vertices += path.count
        coordinates += counted(path)
        coordinateBytes += path.count * MemoryLayout<Coordinate>.stride
    }

    /// The stored fields of a ``PreparedFence``, in its order, for the instance's size.
    private struct PreparedFields {
        var fence: Fence
        var westLimit: Double
        var locator: PolygonLocator
        var isPolygon: Bool
        var frame: LocalFrame
        var grid: SegmentGrid
        var radius: Double
    }

    /// The stored fields of a ``PolygonLocator/Cells`` instance, in its order.
    private struct LocatorCellsFields {
        var columns: Int, rows: Int
        var cellScaleX: Double, cellScaleY: Double
        var cells: [UInt8]
        var bands: PolygonLocator.Bands
    }

    /// The stored fields of a ``SegmentGrid/Cells`` instance, in its order.
    private struct GridCellsFields {
        var minE: Double, minN: Double, maxE: Double, maxN: Double
        var cellSize: Double
        var columns: Int, rows: Int
        var cellStart: CompactIndices
        var cellItems: CompactIndices
    }

    /// The heap block of a ``PreparedFence`` instance and the sizes of its largest fields.
    package static var preparedFenceLayout: [(name: String, bytes: Int)] {
        [
            ("block", block(16 + MemoryLayout<PreparedFields>.size)), ("header", 16), ("Fence", MemoryLayout<Fence>.size),
            ("PolygonLocator", MemoryLayout<PolygonLocator>.size), ("SegmentGrid", MemoryLayout<SegmentGrid>.size),
            ("LocalFrame", MemoryLayout<LocalFrame>.size),
        ]
    }

    /// Adds a prepared fence: its fence, its object, locator and grid.
    package mutating func add(_ prepared: PreparedFence) {
        add(prepared.fence)
        objects += FenceMemory.block(16 + MemoryLayout<PreparedFields>.size)
        blocks += 1
        overhead += FenceMemory.block(16 + MemoryLayout<PreparedFields>.size) - MemoryLayout<PreparedFields>.size
        // Ring arrays the locator shares with the fence are the fence's coordinates.
        var own: Set<UnsafeRawPointer> = []
        if case .polygons(let polygons) = prepared.fence.geometry {
            for p in polygons {
                for ring in [p.exterior] + p.holes { if let a = FenceMemory.address(ring) { own.insert(a) } }
            }
        }
        let locator = prepared.locator, rings = locator.rings
        for ring in rings.several.isEmpty ? [rings.first] : rings.several {
            guard let a = FenceMemory.address(ring), !own.contains(a) else { continue }
            coordinates += counted(ring)
        }
        containment += counted(rings.several) + counted(rings.starts) + counted(rings.owners)
        if rings.extra != nil { containment += object(3 * MemoryLayout<[Int]>.stride) }
        if let cells = locator.grid {
            containment +=
                counted(cells.cells) + counted(cells.bands.start) + counted(cells.bands.edges)
                + object(MemoryLayout<LocatorCellsFields>.size)
        }
        let grid = prepared.grid
        distance += counted(grid.points)
        if let cells = grid.cells {
            distance += counted(cells.cellStart) + counted(cells.cellItems) + object(MemoryLayout<GridCellsFields>.size)
        }
    }

    /// The heap block of a class instance whose stored fields take `fields` bytes, tallied.
    private mutating func object(_ fields: Int) -> Int {
        let bytes = FenceMemory.block(16 + fields)
        blocks += 1
        overhead += bytes - fields
        return bytes
    }

    /// Adds an index's arrays.
    package mutating func add(_ index: FenceIndex) {
        self.index += counted(index.boxes) + counted(index.children) + counted(index.ids)
    }

    /// Adds a snapshot: its prepared fences, indexes, key dictionary and tables.
    package mutating func add(_ snapshot: EngineSnapshot) {
        for p in snapshot.fences { add(p) }
        add(snapshot.index)
        add(snapshot.unwatchedIndex)
        // The key table's fences array is `snapshot.fences` (counted in the tables below).
        strings += counted(snapshot.fenceNumbers.slots) + counted(snapshot.fenceNumbers.layerStarts)
            + counted(snapshot.fenceNumbers.layerNames)
        for name in snapshot.fenceNumbers.layerNames { strings += string(name) }
        tables +=
            counted(snapshot.fences) + counted(snapshot.fenceWatchStart)
            + counted(snapshot.fenceWatches) + counted(snapshot.fenceReach)
            + counted(snapshot.fenceFollows) + counted(snapshot.watches)
            + counted(snapshot.rules) + counted(snapshot.watchNumbers)
        for case let device? in snapshot.fenceFollows { tables += string(device) }
    }

    /// Adds the arrays of layers whose fences are counted elsewhere (in a snapshot).
    package mutating func addArrays(of layers: [FenceLayer]) {
        for layer in layers { self.layers += (layer.own.map { counted($0) } ?? 0) + counted(layer.prepared) }
    }
}
