import Foundation

/// The `DT_NEEDED` entries of a 64-bit little-endian ELF file (what `readelf -d` lists as
/// "Shared library"): the libraries the dynamic loader maps before `main`.
struct ELFDynamicSection {
    var needed: [String]

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads the section headers of `path`, the `SHT_DYNAMIC` section and the string table it
    /// links to; only those parts of the file are read.
    init(path: String) throws {
        guard let file = FileHandle(forReadingAtPath: path) else { throw Malformed(description: "\(path): cannot open") }
        defer { try? file.close() }
        func read(_ offset: UInt64, _ count: Int) throws -> Data {
            try file.seek(toOffset: offset)
            let data = try file.read(upToCount: count) ?? Data()
            guard data.count == count else { throw Malformed(description: "\(path): \(count) bytes at \(offset) past the end") }
            return data
        }
        func integer<T: FixedWidthInteger>(_ data: Data, _ offset: Int, _: T.Type) -> T {
            var value = T.zero
            for index in (0..<MemoryLayout<T>.size).reversed() {
                value = value << 8 | T(data[data.startIndex + offset + index])
            }
            return value
        }
        let header = try read(0, 64)
        guard header.prefix(4) == Data([0x7F, 0x45, 0x4C, 0x46]), header[4] == 2, header[5] == 1 else {
            throw Malformed(description: "\(path): not a 64-bit little-endian ELF file")
        }
        let sectionTable = integer(header, 0x28, UInt64.self)
        let sectionSize = Int(integer(header, 0x3A, UInt16.self))
        let sectionCount = Int(integer(header, 0x3C, UInt16.self))
        let sections = try read(sectionTable, sectionSize * sectionCount)
        /// (type, offset, size, link) of section `index`.
        func section(_ index: Int) -> (type: UInt32, offset: UInt64, size: UInt64, link: Int) {
            let base = index * sectionSize
            return (integer(sections, base + 0x04, UInt32.self), integer(sections, base + 0x18, UInt64.self),
                    integer(sections, base + 0x20, UInt64.self), Int(integer(sections, base + 0x28, UInt32.self)))
        }
        let dynamicType: UInt32 = 6  // SHT_DYNAMIC
        guard let dynamic = (0..<sectionCount).map(section).first(where: { $0.type == dynamicType }) else {
            throw Malformed(description: "\(path): no dynamic section (a static executable?)")
        }
        guard dynamic.link < sectionCount else { throw Malformed(description: "\(path): bad string table index") }
        let strings = section(dynamic.link)
        let stringData = try read(strings.offset, Int(strings.size))
        let entries = try read(dynamic.offset, Int(dynamic.size))
        var needed: [String] = []
        for entry in stride(from: 0, to: entries.count - 15, by: 16) {
            let tag = integer(entries, entry, UInt64.self)
            if tag == 0 { break }  // DT_NULL
            guard tag == 1 else { continue }  // DT_NEEDED
            let start = Int(integer(entries, entry + 8, UInt64.self))
            guard start < stringData.count else { throw Malformed(description: "\(path): bad DT_NEEDED offset") }
            let bytes = stringData[(stringData.startIndex + start)...].prefix { $0 != 0 }
            needed.append(String(decoding: bytes, as: UTF8.self))
        }
        self.needed = needed
    }
}
