/// Reads a fence file piece by piece, so that loading never holds the whole text: a window of
/// the file (a chunk, or one feature if larger) moves forward as the features are taken.
///
/// Only the plain shape is read this way: a top-level object whose `features` member is an
/// array, in well-formed JSON. Anything else (invalid text anywhere, a duplicate key, a
/// trailing comma, a top-level value that is not an object) makes ``read()`` return nil and the
/// caller parses the whole text instead, which words every message exactly as it always did.
struct FenceFileStream {
    /// Reads up to `buffer.count` bytes at file offset `offset`; 0 at the end of the file.
    typealias Reader = (_ offset: Int, _ buffer: UnsafeMutableRawBufferPointer) throws(FenceError) -> Int

    /// Bytes read per call, by default.
    static let defaultChunkSize = 1 << 16

    let reader: Reader
    /// Bytes read per call (small in tests, to cross chunk boundaries everywhere).
    let chunkSize: Int
    /// The bytes of the file from offset `windowStart` on, read so far.
    private var window: [UInt8] = []
    private var windowStart = 0
    /// The next byte to look at, as an index into `window`.
    private var cursor = 0
    private var atEnd = false

    init(reader: @escaping Reader, chunkSize: Int = FenceFileStream.defaultChunkSize) {
        self.reader = reader
        self.chunkSize = max(1, chunkSize)
    }

    /// Reads one element of the `features` array (2 containers deep) from `bytes` (valid only
    /// during the call). `whole` false: `bytes` are what the window holds from the element's
    /// start on (it may go on past it, or be cut short); returns the element's length if it was
    /// read, else nil (nothing read: the stream finds the element's end and asks again).
    /// `whole` true: `bytes` are exactly the element; returns `bytes.count`, or nil if they are
    /// not valid JSON.
    typealias Element = (_ bytes: UnsafeBufferPointer<UInt8>, _ whole: Bool) -> Int?

    /// The file's top-level members, with each element of the `features` array handed to
    /// `element` (see ``Element``), one at a time (the array's value in the result is empty);
    /// nil if the file is not of the plain shape (see above), or as soon as `element` finds an
    /// element is not valid JSON. Throws what the reader throws.
    mutating func read(element: Element) throws(FenceError) -> JSONValue? {
        try fill(3)
        if window.count >= 3, window[0] == 0xEF, window[1] == 0xBB, window[2] == 0xBF { cursor = 3 }
        guard try skipBlanks(), window[cursor] == UInt8(ascii: "{") else { return nil }
        cursor += 1
        var entries: [(key: String, value: JSONValue)] = []
        guard try skipBlanks() else { return nil }
        if window[cursor] == UInt8(ascii: "}") {
            cursor += 1
            return try skipBlanks() ? nil : .object(JSONObject(uniqueEntries: entries))
        }
        while true {
            guard try skipBlanks(), window[cursor] == UInt8(ascii: "\""),
                case .string(let key)? = try value(depth: 1),
                !entries.contains(where: { $0.key == key }),
                try skipBlanks(), window[cursor] == UInt8(ascii: ":")
            else { return nil }
            cursor += 1
            guard try skipBlanks() else { return nil }
            if key == "features", window[cursor] == UInt8(ascii: "[") {
                cursor += 1
                guard try elements(element) else { return nil }
                entries.append((key: key, value: .array([])))
            } else {
                guard let member = try value(depth: 1) else { return nil }
                entries.append((key: key, value: member))
            }
            guard try skipBlanks() else { return nil }
            let separator = window[cursor]
            cursor += 1
            if separator == UInt8(ascii: "}") { break }
            guard separator == UInt8(ascii: ",") else { return nil }
        }
        // Nothing but blanks may follow the top-level object.
        return try skipBlanks() ? nil : .object(JSONObject(uniqueEntries: entries))
    }

    /// The elements of the `features` array (just after its `[`), through its `]`; false if
    /// the array is not well formed.
    private mutating func elements(_ element: Element) throws(FenceError) -> Bool {
        guard try skipBlanks() else { return false }
        if window[cursor] == UInt8(ascii: "]") {
            cursor += 1
            return true
        }
        while true {
            guard try skipBlanks() else { return false }
            dropConsumed()
            // Read in place from the window if it can be (one pass over the text); else (cut
            // by the window's end, or not read that way) find its end and hand it over whole.
            let start = cursor
            if let length = window.withUnsafeBufferPointer({ element(UnsafeBufferPointer(rebasing: $0[start...]), false) }) {
                cursor += length
            } else {
                guard let end = try valueEnd() else { return false }
                cursor = end
                let valid = window.withUnsafeBufferPointer { bytes in
                    element(UnsafeBufferPointer(rebasing: bytes[start..<end]), true) != nil
                }
                guard valid else { return false }
            }
            guard try skipBlanks() else { return false }
            let separator = window[cursor]
            cursor += 1
            if separator == UInt8(ascii: "]") { return true }
            guard separator == UInt8(ascii: ","), try skipBlanks(), window[cursor] != UInt8(ascii: "]") else {
                return false
            }
        }
    }

    /// Parses the value starting at the cursor (`depth` containers deep) and moves past it;
    /// nil if it is not valid JSON.
    private mutating func value(depth: Int) throws(FenceError) -> JSONValue? {
        dropConsumed()
        guard let end = try valueEnd() else { return nil }
        let start = cursor
        cursor = end
        return window.withUnsafeBufferPointer { bytes in
            JSONReader.parseFragment(UnsafeBufferPointer(rebasing: bytes[start..<end]), depth: depth)
        }
    }

    /// Where the value starting at the cursor ends (reading on as needed): after its closing
    /// bracket or quote, or, for a bare word or number, at the next blank, `,`, `]` or `}`.
    /// Only finds the extent; ``JSONReader/parseFragment(_:depth:)`` checks the value.
    private mutating func valueEnd() throws(FenceError) -> Int? {
        var i = cursor
        var depth = 0
        var inString = false
        var escaped = false
        while true {
            if i == window.count {
                try fill(i - cursor + 1)
                if i == window.count {
                    // The end of the file: only a bare word or number may end there.
                    return depth == 0 && !inString && i > cursor ? i : nil
                }
            }
            let b = window[i]
            if inString {
                if escaped {
                    escaped = false
                } else if b == UInt8(ascii: "\\") {
                    escaped = true
                } else if b == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return i + 1 }
                }
            } else {
                switch b {
                case UInt8(ascii: "\""):
                    inString = true
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    if depth == 0 { return i > cursor ? i : nil }
                    depth -= 1
                    if depth == 0 { return i + 1 }
                case UInt8(ascii: ","), 0x20, 0x0A, 0x0D, 0x09:
                    if depth == 0 { return i > cursor ? i : nil }
                default:
                    break
                }
            }
            i += 1
        }
    }

    /// Moves the cursor past JSON blanks; false at the end of the file.
    private mutating func skipBlanks() throws(FenceError) -> Bool {
        while true {
            if cursor == window.count {
                try fill(1)
                if cursor == window.count { return false }
            }
            switch window[cursor] {
            case 0x20, 0x0A, 0x0D, 0x09: cursor += 1
            default: return true
            }
        }
    }

    /// Forgets the bytes before the cursor once they are a chunk's worth (their memory is
    /// reused for what is read next).
    private mutating func dropConsumed() {
        guard cursor >= chunkSize else { return }
        window.removeSubrange(0..<cursor)
        windowStart += cursor
        cursor = 0
    }

    /// Reads until at least `count` bytes follow the cursor, or the file ends.
    private mutating func fill(_ count: Int) throws(FenceError) {
        while !atEnd, window.count - cursor < count {
            let old = window.count
            window.append(contentsOf: repeatElement(0, count: chunkSize))
            let offset = windowStart + old
            let result: Result<Int, FenceError> = window.withUnsafeMutableBytes { bytes in
                do throws(FenceError) {
                    return .success(try reader(offset, UnsafeMutableRawBufferPointer(rebasing: bytes[old...])))
                } catch {
                    return .failure(error)
                }
            }
            let n: Int
            do {
                n = try result.get()
            } catch {
                window.removeSubrange(old...)
                throw error
            }
            window.removeSubrange((old + max(0, n))...)
            if n <= 0 { atEnd = true }
        }
    }
}
