/// A parsed JSON or JSON5 text: the value, plus where each of its parts was written.
///
/// Locations are kept cheaply: one byte offset per value (and per object key) while parsing;
/// lines and columns are computed only when asked for.
public struct JSONDocument: Sendable {
    /// Where one value was written: the offset of its first byte, of its key when it is an object
    /// member (else -1), and its children (members or elements) as a range of `children`.
    struct Node: Sendable {
        var offset: Int32
        var keyOffset: Int32
        var firstChild: Int32
        var childCount: Int32
    }

    /// The parsed value.
    public let value: JSONValue
    /// The file name as given to the reader, for messages.
    public let file: String
    let text: [UInt8]
    /// Nodes in document order; node 0 is the top-level value.
    let nodes: [Node]
    /// Node numbers of every container's children, each container's contiguous.
    let children: [Int32]
    /// Byte offset of the start of every line (line 1 starts at 0).
    let lineStarts: [Int32]

    init(value: JSONValue, file: String, text: [UInt8], nodes: [Node], children: [Int32]) {
        self.value = value
        self.file = file
        self.text = text
        self.nodes = nodes
        self.children = children
        self.lineStarts = JSONDocument.lineStarts(of: text)
    }

    /// Where the value at `path` was written; for an object member (the path ends in a key),
    /// where its key was written. Nil if there is no value at `path`.
    public func location(of path: [JSONPathComponent]) -> SourceLocation? {
        guard let node = node(at: path) else { return nil }
        let n = nodes[node]
        return location(ofByteOffset: Int(n.keyOffset >= 0 ? n.keyOffset : n.offset))
    }

    /// Where the value at `path` was written (for an object member: its value, not its key).
    public func valueLocation(of path: [JSONPathComponent]) -> SourceLocation? {
        guard let node = node(at: path) else { return nil }
        return location(ofByteOffset: Int(nodes[node].offset))
    }

    /// The line and column (in characters) of byte `offset` of the text.
    public func location(ofByteOffset offset: Int) -> SourceLocation {
        let offset = max(0, min(offset, text.count))
        // The last line start <= offset.
        var low = 0, high = lineStarts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if Int(lineStarts[mid]) <= offset { low = mid } else { high = mid - 1 }
        }
        let start = Int(lineStarts[low])
        let column = String(decoding: text[start..<offset], as: UTF8.self).count + 1
        return SourceLocation(line: low + 1, column: column)
    }

    /// The node number of the value at `path`, if any.
    func node(at path: [JSONPathComponent]) -> Int? {
        guard !nodes.isEmpty else { return nil }
        var node = 0
        var value = self.value
        for component in path {
            let n = nodes[node]
            let position: Int
            switch (component, value) {
            case (.key(let key), .object(let object)):
                guard let i = object.entries.firstIndex(where: { $0.key == key }) else { return nil }
                position = i
                value = object.entries[i].value
            case (.index(let i), .array(let array)):
                guard i >= 0, i < array.count else { return nil }
                position = i
                value = array[i]
            default:
                return nil
            }
            guard position < Int(n.childCount) else { return nil }
            node = Int(children[Int(n.firstChild) + position])
        }
        return node
    }

    /// Line start offsets: after every LF, after a CR not followed by LF.
    static func lineStarts(of text: [UInt8]) -> [Int32] {
        var starts: [Int32] = [0]
        text.withUnsafeBufferPointer { bytes in
            var i = 0
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                if b == 0x0A {
                    starts.append(Int32(i + 1))
                } else if b == 0x0D, i + 1 >= n || bytes[i + 1] != 0x0A {
                    starts.append(Int32(i + 1))
                }
                i += 1
            }
        }
        return starts
    }

    /// The location of `offset` in `bytes`, scanning from the start (for errors found while parsing).
    static func location(ofByteOffset offset: Int, in bytes: UnsafeBufferPointer<UInt8>) -> SourceLocation {
        var line = 1
        var lineStart = 0
        var i = 0
        let end = min(offset, bytes.count)
        while i < end {
            let b = bytes[i]
            if b == 0x0A || (b == 0x0D && (i + 1 >= bytes.count || bytes[i + 1] != 0x0A)) {
                line += 1
                lineStart = i + 1
            }
            i += 1
        }
        let column = String(decoding: UnsafeBufferPointer(rebasing: bytes[lineStart..<end]), as: UTF8.self).count + 1
        return SourceLocation(line: line, column: column)
    }
}
